#!/usr/bin/env bash
# Prepares .gl/ for runs on the GPU machine (see ../shared/DEVICE.md): the
# shared loader packages plus what oa's binaries and tests need there
# (libfmt9, libpng16, the validation layers).
#   --python  also .gl/extra-py: Debian 12's python3.11 with numpy, to run the
#             oa module built here (PYTHONPATH=build/python "$OA_PYTHON" ...)
#   --mpi     also .gl/extra-mpi: OpenMPI's runtime (mpirun, libmpi and its
#             plugins), for `mpirun -np N oa ...`; oa's binaries link libmpi
# Each of these folders has an env.sh to source there after .gl/extra/env.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
python=0 mpi=0
for arg in "$@"; do
  case $arg in
    --python) python=1 ;;
    --mpi) mpi=1 ;;
    *) echo "usage: $0 [--python] [--mpi]" >&2; exit 2 ;;
  esac
done
../shared/device/prepare.sh >/dev/null
# A fresh H200 machine's NVIDIA Vulkan driver needs glvnd (seen 2026-11-30:
# without these, vkCreateInstance finds no driver). vk-env.sh unpacks them into /.
(cd .gl && for p in libglvnd0 libegl1 libgl1 libglx0 libopengl0 libgles2; do
  ls ${p}_*.deb >/dev/null 2>&1 || apt-get download "$p" >/dev/null 2>&1
done)
# Extras are unpacked outside / (unpacking more into / can break the machine).
mkdir -p .gl/extra && cd .gl/extra
for p in libfmt9 libpng16-16; do
  ls ${p}_*.deb >/dev/null 2>&1 || apt-get download "$p" >/dev/null 2>&1
done
# The validation layers come from Debian trixie (1.4.309; bookworm's 1.3.239
# does not know cooperative matrices or SPIR-V 1.6), with trixie's loader of
# the same version (found first through LD_LIBRARY_PATH: a 1.3 loader under a
# 1.4 layer makes the layer report the loader's own device-level lookups of
# instance functions). They need glibc 2.38 and libstdc++ 14, which the GPU
# machine (Ubuntu 24.04) has. A private apt state in /tmp leaves this
# machine's sources alone.
if ! ls vulkan-validationlayers_1.4*.deb libvulkan1_1.4*.deb >/dev/null 2>&1; then
  rm -f vulkan-validationlayers_*.deb libvulkan1_*.deb
  t=/tmp/oa-trixie-apt && mkdir -p $t/lists/partial $t/cache/archives/partial
  echo "deb http://deb.debian.org/debian trixie main" > $t/sources.list
  o="-o Dir::Etc::SourceList=$t/sources.list -o Dir::Etc::SourceParts=/dev/null -o Dir::State::Lists=$t/lists -o Dir::Cache=$t/cache"
  apt-get $o update >/dev/null 2>&1 && apt-get $o download vulkan-validationlayers libvulkan1 >/dev/null 2>&1
fi
cat > env.sh <<'ENV'
# Sourced after .gl/vk-env.sh on the GPU machine.
for f in .gl/extra/*.deb; do dpkg -x "$f" /opt/oa-extra; done
export LD_LIBRARY_PATH=/opt/oa-extra/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export VK_LAYER_PATH=/opt/oa-extra/usr/share/vulkan/explicit_layer.d
ENV
cd ../..

# Downloads the named bookworm packages into folder $1 (once each).
download() {
  local dir=$1; shift
  mkdir -p "$dir"
  for p in "$@"; do
    ls "$dir/${p}"_*.deb >/dev/null 2>&1 || (cd "$dir" && apt-get download "$p" >/dev/null 2>&1)
  done
}

# Debian's interpreter statically links libpython; the rest of the standard
# library, numpy and the BLAS/LAPACK that numpy links (Debian selects these
# through alternatives, which dpkg -x does not create: hence their own
# directories on the library path). libssl, libbz2 and liblzma come from the
# GPU machine's own system. Everything lives in /opt/oa-py and reaches only
# the programs started through $OA_PYTHON: PYTHONHOME or a library path
# exported to the shell would break the machine's own python3 (PyTorch).
if [ $python = 1 ]; then
  download .gl/extra-py python3.11-minimal libpython3.11-minimal libpython3.11-stdlib python3-numpy \
    libblas3 liblapack3 libgfortran5 libquadmath0 libffi8 libexpat1
  cat > .gl/extra-py/env.sh <<'ENV'
# Sourced on the GPU machine: unpacks the packages beside this file into
# /opt/oa-py and sets OA_PYTHON to a python3.11 that sees them (numpy from
# Debian's dist-packages, the oa module from PYTHONPATH).
oa_py_dir=$(dirname "${BASH_SOURCE[0]}")
for f in "$oa_py_dir"/*.deb; do dpkg -x "$f" /opt/oa-py; done
mkdir -p /opt/oa-py/bin
cat > /opt/oa-py/bin/python3.11 <<'RUN'
#!/bin/sh
l=/opt/oa-py/usr/lib/x86_64-linux-gnu
export PYTHONHOME=/opt/oa-py/usr
export LD_LIBRARY_PATH=/opt/oa-py/lib/x86_64-linux-gnu:$l:$l/blas:$l/lapack${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
exec /opt/oa-py/usr/bin/python3.11 "$@"
RUN
chmod +x /opt/oa-py/bin/python3.11
export OA_PYTHON=/opt/oa-py/bin/python3.11
ENV
fi

# OpenMPI 4.1 with its own PMIx, hwloc and libevent, relocated by OPAL_PREFIX
# and PMIX_PREFIX. For ranks on one host: shared memory (vader) and TCP. The
# fabric transports (UCX, libfabric, verbs, PSM) and their libraries are left
# out, and so are their components, which would otherwise report that they
# cannot load. libudev1 (which hwloc links) is unpacked only where the
# machine lacks libudev.so.1.
if [ $mpi = 1 ]; then
  download .gl/extra-mpi openmpi-bin libopenmpi3 openmpi-common libpmix2 libhwloc15 libevent-core-2.1-7 \
    libevent-pthreads-2.1-7 libmunge2 libnl-3-200 libnl-route-3-200 libudev1
  cat > .gl/extra-mpi/env.sh <<'ENV'
# Sourced on the GPU machine: unpacks the packages beside this file into
# /opt/oa-mpi, puts its mpirun first on PATH and its libraries on the
# library path. The machine runs commands as root, which mpirun allows here.
oa_mpi_dir=$(dirname "${BASH_SOURCE[0]}")
for f in "$oa_mpi_dir"/*.deb; do
  case $f in
    */libudev1_*) ldconfig -p | grep -q 'libudev\.so\.1 ' || dpkg -x "$f" /opt/oa-mpi ;;
    *) dpkg -x "$f" /opt/oa-mpi ;;
  esac
done
ln -sf orterun /opt/oa-mpi/usr/bin/mpirun
export PATH=/opt/oa-mpi/usr/bin:$PATH
export LD_LIBRARY_PATH=/opt/oa-mpi/lib/x86_64-linux-gnu:/opt/oa-mpi/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# PMIx finds its plugins and help files through PMIX_PKGLIBDIR and
# PMIX_PKGDATADIR (PMIX_PREFIX alone leaves them at /usr, where the machine
# may hold another PMIx's plugins).
export OPAL_PREFIX=/opt/oa-mpi/usr PMIX_PREFIX=/opt/oa-mpi/usr/lib/x86_64-linux-gnu/pmix2
export PMIX_PKGLIBDIR=$PMIX_PREFIX/lib/pmix PMIX_PKGDATADIR=$PMIX_PREFIX/share/pmix
export OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader,tcp OMPI_MCA_mtl=^ofi,psm,psm2 OMPI_MCA_osc=^ucx
export OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ENV
fi
du -sh .gl/extra* | sed 's/^/carried: /'
echo "ready: run scripts/device-pack.sh after building, carry .gl; begin commands with: . .gl/vk-env.sh; . .gl/extra/env.sh;" \
  "then, as prepared, . .gl/extra-py/env.sh; . .gl/extra-mpi/env.sh;"
