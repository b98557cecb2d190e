package dev.torchjob.operator.cluster;

import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A test class whose jobs run on the real node: the shared operator runs, the node is held for the class
 * alone (another class using it waits), and each test leaves it free of pods.
 */
public final class OnTheRealNode implements BeforeAllCallback, AfterEachCallback, AfterAllCallback {
    private static final ExtensionContext.Namespace HELD = ExtensionContext.Namespace.create(OnTheRealNode.class);

    @Override
    public void beforeAll(ExtensionContext context) {
        OperatorInstall.get().operator();
        context.getStore(HELD).put("exclusive", RealNode.get().exclusive());
    }

    @Override
    public void afterEach(ExtensionContext context) {
        RealNodeJobs.freeTheNode();
    }

    @Override
    public void afterAll(ExtensionContext context) throws Exception {
        AutoCloseable exclusive = context.getStore(HELD).remove("exclusive", AutoCloseable.class);
        if (exclusive != null) {
            exclusive.close();
        }
    }
}
