set -e
mkdir -p /src/gromacs && tar -C /src/gromacs --strip-components=1 -xzf /ctx/gromacs-2026.3.tar.gz
export CCACHE_DIR=/ccache CCACHE_COMPILERCHECK=content
cmake -S /src/gromacs -B /build/gromacs -G Ninja -DCMAKE_BUILD_TYPE=Release -DGMX_GPU=HIP \
  -DCMAKE_HIP_COMPILER=/usr/lib/llvm-21/bin/clang++ "-DCMAKE_HIP_ARCHITECTURES=gfx1201;gfx942" -DGMX_HIP_TARGET_ARCH=gfx1201,gfx942 -DHIPCC_HAS_TARGET_ARCH_gfx1201=TRUE -DHIPCC_HAS_TARGET_ARCH_gfx942=TRUE "-DGPU_TARGETS=gfx1201;gfx942" \
  -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++ -DGMX_FFT_LIBRARY=fftw3 -DGMX_MPI=OFF -DGMX_OPENMP=ON \
  -DGMX_SIMD=AVX2_256 -DBUILD_TESTING=OFF -DGMX_BUILD_OWN_FFTW=OFF -DCMAKE_INSTALL_PREFIX=/opt/gromacs/x \
   \
  -DCMAKE_EXPORT_COMPILE_COMMANDS=ON "-DCMAKE_HIP_FLAGS=--rocm-path=/usr --rocm-device-lib-path=/usr/lib/llvm-21/lib/clang/21/amdgcn/bitcode" > /tmp/cfg.log 2>&1 || { tail -50 /tmp/cfg.log; exit 1; }
tail -5 /tmp/cfg.log
grep -c HIP_COMPILER /build/gromacs/build.ninja || true
grep -o '"file": "[^"]*\.cpp"' /build/gromacs/compile_commands.json | wc -l
python3 - <<'PY'
import json
cc=json.load(open('/build/gromacs/compile_commands.json'))
hip=[c for c in cc if 'offload-arch' in c['command'] or '-x hip' in c['command']]
print(len(cc), len(hip))
print(hip[0]['command'][:1500])
PY
