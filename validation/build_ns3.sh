#!/usr/bin/env bash
# Installs ns-3 3.37 from Debian (ns3 + libns3-dev) if needed and builds our small dumbbell program
# against it: validation/build/ns3-dumbbell. Used by validation/compare.py and bench/run.py.
set -euo pipefail
cd "$(dirname "$0")"
if ! pkg-config --exists ns3-core 2>/dev/null; then
    if [ "$(id -u)" != 0 ]; then
        echo "ns-3 is not installed and this is not root: run 'apt-get install ns3 libns3-dev' as root" >&2
        exit 2
    fi
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ns3 libns3-dev pkg-config >/dev/null
fi
mkdir -p build
if [ ! -x build/ns3-dumbbell ] || [ ns3/dumbbell.cc -nt build/ns3-dumbbell ]; then
    mods="ns3-internet ns3-point-to-point ns3-applications ns3-core ns3-network ns3-traffic-control"
    # Debian's .pc files name unversioned libgsl .so files that only the -dev package ships; link the
    # versioned runtime libraries instead so libgsl-dev is not needed.
    libs=$(pkg-config --libs $mods | sed -E 's#/usr/lib/[^ ]*/libgsl\.so#-l:libgsl.so.27#; s#/usr/lib/[^ ]*/libgslcblas\.so#-l:libgslcblas.so.0#')
    g++ -O2 -std=c++17 ns3/dumbbell.cc -o build/ns3-dumbbell $(pkg-config --cflags ns3-core) $libs
fi
echo "$(pwd)/build/ns3-dumbbell"
