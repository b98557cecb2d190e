package dev.torchjob.operator.cluster;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.marcnuri.helm.Helm;
import com.marcnuri.helm.InstallCommand;
import com.marcnuri.helm.UpgradeCommand;

/**
 * The Helm commands the README and docs give, read from them and run as written with real Helm
 * (helm-java): a command the docs change is the command the tests run.
 */
public final class DocumentedHelm {
    private static final Pattern HELM_COMMAND = Pattern.compile("helm (install|upgrade|uninstall) [^`#\\n]*");

    private DocumentedHelm() {
    }

    /** Every helm command of the README and docs, continuation lines joined, comments dropped, in order. */
    public static List<List<String>> documented(String verb) throws IOException {
        List<Path> texts = new ArrayList<>(List.of(Path.of("README.md")));
        try (var docs = Files.list(Path.of("docs"))) {
            docs.filter(p -> p.toString().endsWith(".md")).sorted().forEach(texts::add);
        }
        Set<List<String>> commands = new LinkedHashSet<>();
        for (Path text : texts) {
            String joined = Files.readString(text).replaceAll("\\\\\\n\\s*", " ");
            Matcher m = HELM_COMMAND.matcher(joined);
            while (m.find()) {
                if (m.group(1).equals(verb)) {
                    commands.add(List.of(m.group().strip().split("\\s+")));
                }
            }
        }
        return new ArrayList<>(commands);
    }

    /** {@code helm install NAME CHART [-n|--namespace NS] [--create-namespace] [--set K=V]...}; anything else fails the test. */
    public static InstallCommand install(List<String> args, Path kubeconfig) {
        InstallCommand install = new Helm(Path.of(args.get(3))).install().withName(args.get(2)).withKubeConfig(kubeconfig);
        for (int i = 4; i < args.size(); i++) {
            switch (args.get(i)) {
                case "-n", "--namespace" -> install = install.withNamespace(args.get(++i));
                case "--create-namespace" -> install = install.createNamespace();
                case "--set" -> {
                    String[] value = args.get(++i).split("=", 2);
                    install = install.set(value[0], value[1]);
                }
                default -> throw new AssertionError("the test does not know " + args.get(i) + " of: " + String.join(" ", args));
            }
        }
        return install;
    }

    /** {@code helm upgrade NAME CHART [-n|--namespace NS] [--reuse-values]}. */
    public static UpgradeCommand upgrade(List<String> args, Path kubeconfig) {
        UpgradeCommand upgrade = new Helm(Path.of(args.get(3))).upgrade().withName(args.get(2)).withKubeConfig(kubeconfig);
        for (int i = 4; i < args.size(); i++) {
            switch (args.get(i)) {
                case "-n", "--namespace" -> upgrade = upgrade.withNamespace(args.get(++i));
                case "--reuse-values" -> upgrade = upgrade.reuseValues();
                default -> throw new AssertionError("the test does not know " + args.get(i) + " of: " + String.join(" ", args));
            }
        }
        return upgrade;
    }

    /** {@code helm uninstall NAME [-n|--namespace NS]}. */
    public static void uninstall(List<String> args, Path kubeconfig) {
        var uninstall = Helm.uninstall(args.get(2)).withKubeConfig(kubeconfig);
        for (int i = 3; i < args.size(); i++) {
            switch (args.get(i)) {
                case "-n", "--namespace" -> uninstall = uninstall.withNamespace(args.get(++i));
                default -> throw new AssertionError("the test does not know " + args.get(i) + " of: " + String.join(" ", args));
            }
        }
        uninstall.call();
    }
}
