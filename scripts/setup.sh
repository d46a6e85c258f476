#!/usr/bin/env bash
# setup.sh - install what andrea needs on Debian 12 (run as root or with sudo).
set -euo pipefail
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# compiler + build; optional libraries (each one is probed by CMake and can be absent);
# fortunes: real English text for the demo when ../shared/data is not there;
# wamerican: the word list of the coherence gate; OpenMPI: `mpirun -np N andrea train`.
$SUDO apt-get install -y -qq --no-install-recommends \
    build-essential cmake pkg-config libomp-dev \
    libpcre2-dev libjansson-dev libpng-dev libopenblas-dev libmicrohttpd-dev \
    libopenmpi-dev openmpi-bin \
    fortunes wamerican > /dev/null
echo "setup: done"
