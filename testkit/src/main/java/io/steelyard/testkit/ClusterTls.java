package io.steelyard.testkit;

/** TLS on the members' client port: server-only, or mutual ({@code --client-cert-auth}). */
record ClusterTls(TestCertificates certificates, boolean clientCertAuth) {}
