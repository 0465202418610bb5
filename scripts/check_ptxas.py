#!/usr/bin/env python3
"""check_ptxas.py [BUILD_DIR]: no library kernel spills registers or has its
wgmmas serialized, except where the allow-lists below say why (and, for the
spills known when the check came in, how much).

Reads the ptxas report kept beside every CUDA object of the library
(<object>.ptxas, written by cmake/keep_ptxas_report.sh at each compile, so a
fresh build and an incremental one both have every object's report) under
BUILD_DIR (default build/release). Fails, naming each kernel and what ptxas
said of it, on a spill or a serialization the allow-list does not name; an
allowed serialization is summed up in one line that says why it is there.
scripts/build.sh runs it after every build.
"""
import os
import re
import subprocess
import sys

# Why the sparse-K instances serialize, and where that is explained.
SPARSE_K = ("the sparse-K ragged-K instances issue only the 32-byte wgmma slices that hold group "
            "tokens, the others predicated off, which makes ptxas serialize their wgmmas; worth it "
            "where ragged-K groups average under 128 tokens (decode wgrad), hence instances of "
            "their own (src/kernels/sm90/grouped_gemm_kernel.cuh, kSparseK; docs/ARCHITECTURE.md)")

# Kernels whose wgmmas ptxas serializes on purpose (name as kernel_name
# gives it: why).
# grouped_gemm_kernel<op, sparse-K, tile (0: 128x128, 1: 128x256), cluster,
# element, A K-major, B K-major>: the ragged-K (op 1) sparse-K instances.
ALLOWED_SERIALIZATIONS = {
    "gg::sm90::grouped_gemm_kernel<(gg_op)1, true, (gg::Sm90Tile)0, 1, __nv_bfloat16, false, false>":
        SPARSE_K,
    "gg::sm90::grouped_gemm_kernel<(gg_op)1, true, (gg::Sm90Tile)0, 1, __nv_bfloat16, false, true>":
        SPARSE_K,
    "gg::sm90::grouped_gemm_kernel<(gg_op)1, true, (gg::Sm90Tile)0, 1, __nv_bfloat16, true, false>":
        SPARSE_K,
    "gg::sm90::grouped_gemm_kernel<(gg_op)1, true, (gg::Sm90Tile)0, 1, __nv_bfloat16, true, true>":
        SPARSE_K,
    "gg::sm90::grouped_gemm_kernel<(gg_op)1, true, (gg::Sm90Tile)0, 1, __half, false, false>":
        SPARSE_K,
    "gg::sm90::grouped_gemm_kernel<(gg_op)1, true, (gg::Sm90Tile)0, 1, __half, false, true>":
        SPARSE_K,
    "gg::sm90::grouped_gemm_kernel<(gg_op)1, true, (gg::Sm90Tile)0, 1, __half, true, false>":
        SPARSE_K,
    "gg::sm90::grouped_gemm_kernel<(gg_op)1, true, (gg::Sm90Tile)0, 1, __half, true, true>":
        SPARSE_K,
    "gg::sm90::grouped_gemm_kernel<(gg_op)1, true, (gg::Sm90Tile)1, 1, __nv_bfloat16, false, false>":
        SPARSE_K,
    "gg::sm90::grouped_gemm_kernel<(gg_op)1, true, (gg::Sm90Tile)1, 1, __nv_bfloat16, false, true>":
        SPARSE_K,
    "gg::sm90::grouped_gemm_kernel<(gg_op)1, true, (gg::Sm90Tile)1, 1, __nv_bfloat16, true, false>":
        SPARSE_K,
    "gg::sm90::grouped_gemm_kernel<(gg_op)1, true, (gg::Sm90Tile)1, 1, __nv_bfloat16, true, true>":
        SPARSE_K,
    "gg::sm90::grouped_gemm_kernel<(gg_op)1, true, (gg::Sm90Tile)1, 1, __half, false, false>":
        SPARSE_K,
    "gg::sm90::grouped_gemm_kernel<(gg_op)1, true, (gg::Sm90Tile)1, 1, __half, false, true>":
        SPARSE_K,
    "gg::sm90::grouped_gemm_kernel<(gg_op)1, true, (gg::Sm90Tile)1, 1, __half, true, false>":
        SPARSE_K,
    "gg::sm90::grouped_gemm_kernel<(gg_op)1, true, (gg::Sm90Tile)1, 1, __half, true, true>":
        SPARSE_K,
}
# The fp8 sparse-K instances (K-major operands only): e4m3 x e4m3, e5m2 x e4m3.
for _tile in (0, 1):
    for _a in ("__nv_fp8_e4m3", "__nv_fp8_e5m2"):
        ALLOWED_SERIALIZATIONS[
            "gg::sm90::grouped_gemm_kernel<(gg_op)1, true, (gg::Sm90Tile)%d, 1, "
            "gg::sm90::Fp8Operands<%s, __nv_fp8_e4m3, (gg::sm90::Fp8Blocks)0>, true, true>"
            % (_tile, _a)] = SPARSE_K

# Kernels that spilled when this check came in, with the bytes of spill
# stores and loads ptxas reported then (name, arch: (stores, loads)): small
# spills the measurements of the time were taken with (docs/PERF.md records
# some, as the quantizer's 256-row instances). None may spill more, and no
# other kernel may spill at all; each is for removing, or for a reason here.
KNOWN_SPILLS = {
    ("gg::portable::portable_gemm_kernel<(gg::PortableTile)0, __half, (gg::portable::Major)0, (gg::portable::Major)0, false, false>",
     "sm_80"): (28, 28),
    ("gg::portable::portable_gemm_kernel<(gg::PortableTile)0, __half, (gg::portable::Major)0, (gg::portable::Major)0, false, false>",
     "sm_90a"): (4, 4),
    ("gg::portable::portable_gemm_kernel<(gg::PortableTile)0, __half, (gg::portable::Major)0, (gg::portable::Major)1, false, false>",
     "sm_80"): (32, 40),
    ("gg::portable::portable_gemm_kernel<(gg::PortableTile)0, __half, (gg::portable::Major)0, (gg::portable::Major)1, false, false>",
     "sm_90a"): (20, 32),
    ("gg::portable::portable_gemm_kernel<(gg::PortableTile)0, __half, (gg::portable::Major)1, (gg::portable::Major)0, false, false>",
     "sm_80"): (60, 88),
    ("gg::portable::portable_gemm_kernel<(gg::PortableTile)0, __half, (gg::portable::Major)1, (gg::portable::Major)0, false, false>",
     "sm_90a"): (48, 80),
    ("gg::portable::portable_gemm_kernel<(gg::PortableTile)0, __half, (gg::portable::Major)1, (gg::portable::Major)1, false, false>",
     "sm_80"): (24, 24),
    ("gg::portable::portable_gemm_kernel<(gg::PortableTile)0, __half, (gg::portable::Major)1, (gg::portable::Major)1, false, false>",
     "sm_90a"): (4, 4),
    ("gg::portable::portable_gemm_kernel<(gg::PortableTile)0, __nv_bfloat16, (gg::portable::Major)0, (gg::portable::Major)0, false, false>",
     "sm_80"): (28, 28),
    ("gg::portable::portable_gemm_kernel<(gg::PortableTile)0, __nv_bfloat16, (gg::portable::Major)0, (gg::portable::Major)0, false, false>",
     "sm_90a"): (4, 4),
    ("gg::portable::portable_gemm_kernel<(gg::PortableTile)0, __nv_bfloat16, (gg::portable::Major)0, (gg::portable::Major)1, false, false>",
     "sm_80"): (32, 40),
    ("gg::portable::portable_gemm_kernel<(gg::PortableTile)0, __nv_bfloat16, (gg::portable::Major)0, (gg::portable::Major)1, false, false>",
     "sm_90a"): (20, 32),
    ("gg::portable::portable_gemm_kernel<(gg::PortableTile)0, __nv_bfloat16, (gg::portable::Major)1, (gg::portable::Major)0, false, false>",
     "sm_80"): (60, 88),
    ("gg::portable::portable_gemm_kernel<(gg::PortableTile)0, __nv_bfloat16, (gg::portable::Major)1, (gg::portable::Major)0, false, false>",
     "sm_90a"): (48, 80),
    ("gg::portable::portable_gemm_kernel<(gg::PortableTile)0, __nv_bfloat16, (gg::portable::Major)1, (gg::portable::Major)1, false, false>",
     "sm_80"): (24, 24),
    ("gg::portable::portable_gemm_kernel<(gg::PortableTile)0, __nv_bfloat16, (gg::portable::Major)1, (gg::portable::Major)1, false, false>",
     "sm_90a"): (4, 4),
    ("gg::quantize::quantize_kernel<(gg_dtype)0, (gg::quantize::Pass)0, 256>", "sm_80"): (4, 4),
    ("gg::quantize::quantize_kernel<(gg_dtype)0, (gg::quantize::Pass)0, 256>", "sm_90a"): (4, 4),
    ("gg::quantize::quantize_kernel<(gg_dtype)0, (gg::quantize::Pass)1, 256>", "sm_90a"): (4, 8),
    ("gg::quantize::quantize_kernel<(gg_dtype)0, (gg::quantize::Pass)1, 64>", "sm_90a"): (4, 8),
    ("gg::quantize::quantize_kernel<(gg_dtype)1, (gg::quantize::Pass)0, 256>", "sm_80"): (4, 4),
    ("gg::quantize::quantize_kernel<(gg_dtype)1, (gg::quantize::Pass)0, 256>", "sm_90a"): (4, 4),
    ("gg::quantize::quantize_kernel<(gg_dtype)1, (gg::quantize::Pass)1, 256>", "sm_80"): (8, 16),
    ("gg::sm90::grouped_gemm_kernel<(gg_op)1, false, (gg::Sm90Tile)1, 2, __half, false, true>",
     "sm_90a"): (4, 16),
    ("gg::sm90::grouped_gemm_kernel<(gg_op)1, false, (gg::Sm90Tile)1, 2, __nv_bfloat16, false, true>",
     "sm_90a"): (4, 16),
}

ENTRY = re.compile(r"^ptxas info\s*: Compiling entry function '([^']+)' for '([^']+)'")
PROPERTIES = re.compile(r"^ptxas info\s*: Function properties for (\S+)")
FRAME = re.compile(r"^\s+(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
SERIALIZED = re.compile(r"wgmma\S* instructions are serialized.*in the function '([^']+)'")


def kernel_names(mangled):
    """Mangled name: demangled, without "void", anonymous namespaces (whose
    mangled names change from build to build) and the parameter list."""
    if not mangled:
        return {}
    result = subprocess.run(["c++filt"], input="\n".join(mangled), capture_output=True,
                            text=True, check=True)
    names = {}
    for name, demangled in zip(mangled, result.stdout.splitlines()):
        demangled = demangled.removeprefix("void ").replace("(anonymous namespace)::", "")
        names[name] = re.sub(r"\([^()]*\)$", "", demangled)
    return names


def reports(build_dir):
    """(object path, report text) of every kernel object that has a report."""
    for root, _, files in os.walk(os.path.join(build_dir, "src")):
        for name in sorted(files):
            if name.endswith(".o.ptxas") and os.path.exists(os.path.join(root, name[:-6])):
                path = os.path.join(root, name)
                with open(path, encoding="utf-8", errors="replace") as report:
                    yield os.path.relpath(path[:-6], build_dir), report.read()


def main():
    build_dir = sys.argv[1] if len(sys.argv) > 1 else "build/release"
    spills = []      # (object, arch, function, stores, loads)
    serialized = []  # (object, arch, function, ptxas's line)
    objects = 0
    for obj, text in reports(build_dir):
        objects += 1
        arch = "?"
        function = None
        for line in text.splitlines():
            entry = ENTRY.match(line)
            if entry:
                arch = entry.group(2)
            properties = PROPERTIES.match(line)
            if properties:
                function = properties.group(1)
            frame = FRAME.match(line)
            if frame and function and (int(frame.group(2)) or int(frame.group(3))):
                spills.append((obj, arch, function, frame.group(2), frame.group(3)))
            serial = SERIALIZED.search(line)
            if serial:
                serialized.append((obj, arch, serial.group(1), line.strip()))
    if objects == 0:
        print(f"check_ptxas: no ptxas reports under {build_dir}/src: build it with this "
              "project's CMake files, whose kernel objects keep them (cmake/PtxasReports.cmake)")
        return 1

    names = kernel_names(sorted({s[2] for s in spills} | {s[2] for s in serialized}))
    failures = []
    known = 0
    for obj, arch, function, stores, loads in spills:
        limit = KNOWN_SPILLS.get((names[function], arch))
        if limit and int(stores) <= limit[0] and int(loads) <= limit[1]:
            known += 1
            continue
        failures.append(f"{names[function]} ({arch}, {obj}): spills registers, "
                        f"{stores} bytes of stores and {loads} bytes of loads"
                        + (f" (known: {limit[0]} and {limit[1]})" if limit else ""))
    allowed = 0
    for obj, arch, function, line in serialized:
        if names[function] in ALLOWED_SERIALIZATIONS:
            allowed += 1
        else:
            failures.append(f"{names[function]} ({arch}, {obj}): {line}")
    for failure in failures:
        print("check_ptxas: " + failure)
    if failures:
        print(f"check_ptxas: FAILED: {len(failures)} kernels spill or serialize their wgmmas "
              "without a reason on the allow-list in scripts/check_ptxas.py")
        return 1
    print(f"check_ptxas: {objects} kernel objects; {known} kernels spill no more than they did "
          "(KNOWN_SPILLS in scripts/check_ptxas.py), no other spills")
    print(f"check_ptxas: {allowed} wgmma serializations (ptxas's C7520 notes), all on purpose: "
          f"{SPARSE_K}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
