package dev.torchjob.operator.local;

import com.oracle.svm.core.annotate.Substitute;
import com.oracle.svm.core.annotate.TargetClass;

import io.vertx.core.net.SelfSignedCertificate;

/**
 * The native executable's embedded API server serves plain HTTP only. The mock server would make a
 * self-signed certificate for HTTPS ({@code useHttps()}), which needs Bouncy Castle; the local mode
 * never asks for it and the application leaves Bouncy Castle out (pom.xml), so in the native image
 * that path ends here with a clear error instead of naming classes that are not there, which
 * GraalVM's link-time checking refuses. The JVM never loads this class.
 */
@TargetClass(SelfSignedCertificate.class)
final class PlainHttpEmbeddedApiServer {

    @Substitute
    static SelfSignedCertificate create() {
        return create("localhost");
    }

    @Substitute
    static SelfSignedCertificate create(String fqdn) {
        throw new UnsupportedOperationException("the embedded API server serves plain HTTP on loopback only: "
                + "self-signed certificates (for " + fqdn + ") are not part of the native executable");
    }
}
