package io.steelyard.console;

import com.google.gson.JsonNull;
import com.google.gson.JsonObject;

/** Numbers in the pages' JSON: a measured value as it is, nothing measured as null. */
final class JsonNumbers {

  private JsonNumbers() {}

  /** NaN (nothing measured) is written as null: JSON has no NaN. */
  static void number(JsonObject o, String name, double v) {
    if (Double.isNaN(v) || Double.isInfinite(v)) {
      o.add(name, JsonNull.INSTANCE);
    } else {
      o.addProperty(name, v);
    }
  }
}
