#!/usr/bin/env bash
# Copies Debian's OpenMPI runtime into a relocatable prefix for the GPU machine, which has no MPI
# and no package registry (docs/scale-out.md, "Measuring on the GPU machine"): mpirun (orterun),
# the MPI libraries and the ones they need, OpenMPI's and PMIx's plugins and help texts, in the
# layout Debian's build expects under its prefix, so that OPAL_PREFIX and PMIX_PREFIX move it.
# Usage: scripts/mpi-bundle.sh DIR      (then: source DIR/env.sh before mpirun)
set -euo pipefail
dest="${1:?usage: mpi-bundle.sh DIR}"
arch=x86_64-linux-gnu
ompi_lib=/usr/lib/$arch/openmpi/lib
[ -x /usr/bin/orterun ] || { echo "mpi-bundle: no OpenMPI here (apt install openmpi-bin libopenmpi-dev)" >&2; exit 1; }
rm -rf "$dest"
mkdir -p "$dest/bin" "$dest/lib/$arch/openmpi/lib" "$dest/share" "$dest/pmix/lib" "$dest/libs"
cp -L /usr/bin/orterun "$dest/bin/orterun"
ln -s orterun "$dest/bin/mpirun"
cp -a "$ompi_lib/openmpi3" "$dest/lib/$arch/openmpi/lib/"
cp -a /usr/share/openmpi "$dest/share/"
cp -a /usr/lib/$arch/pmix2/lib/pmix "$dest/pmix/lib/"
cp -a /usr/lib/$arch/pmix2/share "$dest/pmix/"
# The shared libraries of orterun, libmpi and the plugins that matter here (shared memory, TCP,
# PMIx), without glibc's: side by side in libs/ (LD_LIBRARY_PATH).
for lib in $(ldd /usr/bin/orterun /usr/lib/$arch/libmpi.so.40 "$ompi_lib"/openmpi3/mca_pmix_ext3x.so \
             "$ompi_lib"/openmpi3/mca_btl_vader.so "$ompi_lib"/openmpi3/mca_btl_tcp.so | awk '/=> \//{print $3}' | sort -u); do
  case "$(basename "$lib")" in libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|ld-linux*) continue ;; esac
  cp -L "$lib" "$dest/libs/"
done
cp -L /usr/lib/$arch/libmpi.so.40 "$dest/libs/"
cat > "$dest/env.sh" <<'EOS'
# source this: mpirun and the MPI libraries of this prefix, TCP and shared memory only.
simkit_ompi="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export OPAL_PREFIX="$simkit_ompi" PMIX_PREFIX="$simkit_ompi/pmix" PATH="$simkit_ompi/bin:$PATH"
export LD_LIBRARY_PATH="$simkit_ompi/libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader,tcp OMPI_MCA_pml=ob1
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_mca_base_component_show_load_errors=0
export PMIX_MCA_mca_base_component_path="$simkit_ompi/pmix/lib/pmix" SIMKIT_MPIEXEC="$simkit_ompi/bin/mpirun"
# NVLink multicast stays off (the machines' rule; simkit uses no NCCL, this is for anything it starts).
export PMIX_MCA_pcompress_base_silence_warning=1  # no zlib plugin needed on one node
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
EOS
du -sh "$dest"
