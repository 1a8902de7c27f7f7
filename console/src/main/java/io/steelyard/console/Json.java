package io.steelyard.console;

import com.google.gson.JsonObject;

/** Small helpers for the pages' JSON. */
final class Json {

  private Json() {}

  /** NaN (nothing measured) is written as null: JSON has no NaN. */
  static void number(JsonObject o, String name, double v) {
    if (Double.isNaN(v) || Double.isInfinite(v)) {
      o.add(name, com.google.gson.JsonNull.INSTANCE);
    } else {
      o.addProperty(name, v);
    }
  }
}
