#!/usr/bin/env bash
# Study: the SASS of the kernel twins (instruction counts by opcode), under $OUT.
set -u
OUT=${OUT:-out}
gen=$(mktemp -d)
python -m tcsim.hw.generate "$gen" >/dev/null  # the twins are generated, not committed
for k in kernel1 kernel4 kernel5; do
  nvcc -arch=sm_90 -cubin -o "$OUT/$k.cubin" -Itcsim/hw/kernels -I"$gen" "$gen/$k.cu" \
    && cuobjdump -sass "$OUT/$k.cubin" >"$OUT/$k.sass" && rm -f "$OUT/$k.cubin"
  echo "$k: $(grep -oE '\b(STS|LDSM|LDG|HMMA|BAR|STG|LDS|STL|LDL)[.A-Z0-9]*' "$OUT/$k.sass" \
    | sort | uniq -c | tr '\n' ' ')"
done
