package dev.torchjob.operator.local;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import dev.torchjob.operator.local.MachineGpus.Gpu;

/** Finding this machine's NVIDIA GPUs as the device plugin finds a node's, and what the operator's own CUDA_VISIBLE_DEVICES leaves. */
class MachineGpusTest {
    static final String TWO = """
            GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-1b2c3d4e-0000-0000-0000-000000000000)
            GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-9f8e7d6c-0000-0000-0000-000000000000)
              MIG 1g.10gb     Device  0: (UUID: MIG-aaaa)
            """;

    static MachineGpus two() {
        return new MachineGpus(MachineGpus.parseNvidiaSmi(TWO), "nvidia-smi -L");
    }

    @Test
    void nvidiaSmiListsEachGpuWithItsUuidAndModelAndNotItsMigDevices() {
        List<Gpu> gpus = MachineGpus.parseNvidiaSmi(TWO);
        assertEquals(List.of(new Gpu(0, "GPU-1b2c3d4e-0000-0000-0000-000000000000", "NVIDIA H100 80GB HBM3"),
                new Gpu(1, "GPU-9f8e7d6c-0000-0000-0000-000000000000", "NVIDIA H100 80GB HBM3")), gpus);
        assertEquals("GPU 0 (NVIDIA H100 80GB HBM3)", gpus.get(0).toString());
        assertEquals("GPU-1b2c3d4e-0000-0000-0000-000000000000", gpus.get(0).id(), "named by UUID: CUDA's own order may differ");
    }

    @Test
    void withoutNvidiaSmiTheDriversFilesSayWhichGpusThereAreInBusOrder(@TempDir Path proc) throws IOException {
        for (String bus : List.of("0000:c1:00.0", "0000:41:00.0")) {
            Files.createDirectories(proc.resolve(bus));
            Files.writeString(proc.resolve(bus).resolve("information"), "Model: \t\t NVIDIA A100-SXM4-40GB\nIRQ:  \t\t 123\nGPU UUID: \t GPU-"
                    + bus.substring(5, 7) + "\nBus Location: \t " + bus + "\nDevice Minor: \t 0\n");
        }
        MachineGpus found = MachineGpus.fromProc(proc);
        assertEquals(List.of(new Gpu(0, "GPU-41", "NVIDIA A100-SXM4-40GB"), new Gpu(1, "GPU-c1", "NVIDIA A100-SXM4-40GB")), found.gpus());
        assertEquals("no GPU (no nvidia-smi on PATH and no " + proc.resolve("none") + ")", MachineGpus.fromProc(proc.resolve("none")).said());
    }

    @Test
    void theOperatorsCudaVisibleDevicesLeavesOnlyTheGpusItNamesAsCudaReadsIt() {
        MachineGpus machine = two();
        assertEquals(machine, machine.visibleTo(null), "unset: all of them");
        assertEquals(List.of(1), indices(machine.visibleTo("1")));
        assertEquals(List.of(1, 0), indices(machine.visibleTo("GPU-9f8e,0")), "by UUID prefix or index, in its order");
        assertEquals(List.of(0), indices(machine.visibleTo("0,7,1")), "up to the first entry naming no GPU");
        assertTrue(machine.visibleTo("").gpus().isEmpty(), "empty: none");
        assertTrue(machine.visibleTo("-1").gpus().isEmpty());
        assertEquals("no GPU (nvidia-smi -L, CUDA_VISIBLE_DEVICES=)", machine.visibleTo("").said());
        assertEquals("2 GPUs: GPU 0 (NVIDIA H100 80GB HBM3), GPU 1 (NVIDIA H100 80GB HBM3)", machine.said());
    }

    static List<Integer> indices(MachineGpus machine) {
        return machine.gpus().stream().map(Gpu::index).toList();
    }
}
