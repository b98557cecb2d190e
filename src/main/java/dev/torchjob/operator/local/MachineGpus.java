package dev.torchjob.operator.local;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * The NVIDIA GPUs of this machine the local mode may give to replicas, found as NVIDIA's device plugin
 * finds a node's: {@code nvidia-smi -L}, else the driver's {@code /proc/driver/nvidia/gpus}; only those the
 * operator's own {@code CUDA_VISIBLE_DEVICES} allows, when it is set.
 *
 * @param gpus in nvidia-smi's order (PCI bus order)
 * @param source where they were found, or why none were
 */
record MachineGpus(List<Gpu> gpus, String source) {
    static final String PROC = "/proc/driver/nvidia/gpus";
    private static final Pattern SMI_LINE = Pattern.compile("^GPU (\\d+): (.*?)(?: \\(UUID: ([^)]+)\\))?\\s*$");

    /** One GPU: its index as nvidia-smi numbers it, its UUID when known, its model. */
    record Gpu(int index, String uuid, String model) {
        /** How a replica's CUDA_VISIBLE_DEVICES names it: by UUID, which does not depend on CUDA's device order. */
        String id() {
            return uuid != null ? uuid : Integer.toString(index);
        }

        @Override
        public String toString() {
            return "GPU " + index + (model == null || model.isBlank() ? "" : " (" + model + ")");
        }
    }

    /** This machine's, seen by the operator's environment. */
    static MachineGpus discover(Map<String, String> environment) {
        MachineGpus found = fromNvidiaSmi().orElseGet(() -> fromProc(Path.of(PROC)));
        return found.visibleTo(environment.get("CUDA_VISIBLE_DEVICES"));
    }

    private static Optional<MachineGpus> fromNvidiaSmi() {
        try {
            Process process = new ProcessBuilder("nvidia-smi", "-L").redirectErrorStream(true).start();
            byte[] output = process.getInputStream().readAllBytes();
            if (!process.waitFor(10, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                return Optional.empty();
            }
            // No GPU, or a driver that does not answer: exit code 6 or 9 ("No devices were found"), then try the driver's own files.
            return process.exitValue() != 0 ? Optional.empty()
                    : Optional.of(new MachineGpus(parseNvidiaSmi(new String(output, StandardCharsets.UTF_8)), "nvidia-smi -L"));
        } catch (IOException e) {
            return Optional.empty(); // no nvidia-smi on PATH
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return Optional.empty();
        }
    }

    /** {@code GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-…)} per GPU; the MIG lines under one are not GPUs of their own here. */
    static List<Gpu> parseNvidiaSmi(String output) {
        List<Gpu> gpus = new ArrayList<>();
        for (String line : output.lines().toList()) {
            Matcher matcher = SMI_LINE.matcher(line);
            if (matcher.matches()) {
                gpus.add(new Gpu(Integer.parseInt(matcher.group(1)), matcher.group(3), matcher.group(2).trim()));
            }
        }
        return gpus;
    }

    /** The driver's folder per GPU, named by its PCI bus id: sorted, they are in nvidia-smi's order. */
    static MachineGpus fromProc(Path folder) {
        if (!Files.isDirectory(folder)) {
            return new MachineGpus(List.of(), "no nvidia-smi on PATH and no " + folder);
        }
        List<Gpu> gpus = new ArrayList<>();
        try (Stream<Path> buses = Files.list(folder)) {
            for (Path bus : buses.sorted().toList()) {
                String information = Files.readString(bus.resolve("information"));
                gpus.add(new Gpu(gpus.size(), field(information, "GPU UUID"), field(information, "Model")));
            }
        } catch (IOException e) {
            return new MachineGpus(List.of(), folder + " could not be read: " + e.getMessage());
        }
        return new MachineGpus(gpus, folder.toString());
    }

    private static String field(String information, String name) {
        return information.lines().filter(line -> line.startsWith(name + ":")).map(line -> line.substring(name.length() + 1).trim())
                .findFirst().orElse(null);
    }

    /**
     * Those a {@code CUDA_VISIBLE_DEVICES} allows: unset, all; otherwise the GPUs it names, by index or by
     * (a prefix of) UUID, in its order, up to the first entry that names none (as CUDA reads it).
     */
    MachineGpus visibleTo(String cudaVisibleDevices) {
        if (cudaVisibleDevices == null) {
            return this;
        }
        List<Gpu> visible = new ArrayList<>();
        for (String entry : cudaVisibleDevices.split(",", -1)) {
            String wanted = entry.trim();
            Optional<Gpu> gpu = gpus.stream().filter(g -> Integer.toString(g.index()).equals(wanted)
                    || !wanted.isEmpty() && g.uuid() != null && g.uuid().startsWith(wanted)).findFirst();
            if (gpu.isEmpty() || visible.contains(gpu.get())) {
                break;
            }
            visible.add(gpu.get());
        }
        return new MachineGpus(List.copyOf(visible), source + ", CUDA_VISIBLE_DEVICES=" + cudaVisibleDevices);
    }

    /** "1 GPU: GPU 0 (NVIDIA H100 80GB HBM3)", or "no GPU (why)". */
    String said() {
        if (gpus.isEmpty()) {
            return "no GPU (" + source + ")";
        }
        return gpus.size() + (gpus.size() == 1 ? " GPU: " : " GPUs: ") + String.join(", ", gpus.stream().map(Gpu::toString).toList());
    }
}
