package dev.torchjob.operator.local;

import java.util.Arrays;

import io.quarkus.runtime.Quarkus;
import io.quarkus.runtime.annotations.QuarkusMain;

/**
 * Entry point. Without arguments: the operator, against the cluster of the kubeconfig (or the
 * in-cluster service account). With {@code run JOB.yaml}: the local mode (see {@link LocalLauncher}).
 */
@QuarkusMain
public class TorchJobMain {
    public static void main(String... args) {
        if (args.length > 0 && "run".equals(args[0])) {
            System.exit(LocalLauncher.launch(Arrays.copyOfRange(args, 1, args.length)));
        }
        Quarkus.run(args);
    }
}
