/**
 * Implementation helpers shared by steelyard's modules. Public only so the modules can share
 * them; no compatibility promise: anything here may change or go in any release.
 */
package io.steelyard.registry.internal;
