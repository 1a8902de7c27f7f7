package io.steelyard.agent;

/**
 * Told about every state change of a {@link ServiceRegistration}, in order, on the registration's
 * own thread. Must return quickly and must not block: the registration does nothing else while a
 * listener runs. An exception thrown by a listener is logged and otherwise ignored.
 */
@FunctionalInterface
public interface RegistrationListener {
  void onStateChanged(RegistrationState state);

  /**
   * The lease was lost for {@code cause}; called just before the move to {@link
   * RegistrationState#RECOVERING}, once per loss. Does nothing unless overridden.
   */
  default void onRecovery(RecoveryCause cause) {}
}
