set -e
bash /ctx/configure.sh
cp /build/gromacs/compile_commands.json /out/
