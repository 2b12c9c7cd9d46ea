#!/usr/bin/env bash
# Boot Debian's PREEMPT_RT kernel under qemu (TCG) with a busybox initramfs,
# trace timer wake-ups (timerlat), interrupts, NMIs, softirqs, scheduler and
# osnoise events under load, and extract the ftrace text to OUT.
#
#   scripts/qemu-rt-trace.sh OUT [SECONDS]
#
# Needs: apt-get (to fetch the kernel package), qemu-system-x86_64,
# busybox-static, cpio, gzip, base64. With CI=true or as root it installs the
# missing tools with apt-get. Exit status 77 means "cannot run here" (the
# message says why), so test harnesses can skip.
# Recipe: docs/guide/latency.md "A real PREEMPT_RT kernel".
set -euo pipefail

out=${1:?usage: qemu-rt-trace.sh OUT [SECONDS]}
secs=${2:-2}
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${RTGPU_QEMU_CACHE:-$root/target/qemu-rt}
mkdir -p "$cache"

skip() { echo "qemu-rt-trace: SKIP: $*" >&2; exit 77; }

need=()
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
[ -x /bin/busybox ] && file -L /bin/busybox 2>/dev/null | grep -q static || need+=(busybox-static)
command -v cpio >/dev/null || need+=(cpio)
if [ ${#need[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        export DEBIAN_FRONTEND=noninteractive
        apt-get install -y -q --no-install-recommends "${need[@]}" >"$cache/apt.log" 2>&1 \
            || { apt-get update -q >>"$cache/apt.log" 2>&1 \
                 && apt-get install -y -q --no-install-recommends "${need[@]}" >>"$cache/apt.log" 2>&1; } \
            || skip "cannot install ${need[*]} (see $cache/apt.log)"
    else
        skip "missing ${need[*]} and not root with apt-get to install them"
    fi
fi
busybox=/bin/busybox
file -L "$busybox" 2>/dev/null | grep -q static || busybox=$(command -v busybox)

# The kernel: the version linux-image-rt-amd64 currently names.
kernel=$(ls "$cache"/vmlinuz-*-rt-amd64 2>/dev/null | head -n1 || true)
if [ -z "$kernel" ]; then
    command -v apt-get >/dev/null || skip "no apt-get to download the PREEMPT_RT kernel"
    pkg=$(apt-cache depends linux-image-rt-amd64 2>/dev/null | awk '/Depends: linux-image-/{print $2; exit}')
    [ -n "$pkg" ] || { apt-get update -q >/dev/null 2>&1 || true;
        pkg=$(apt-cache depends linux-image-rt-amd64 2>/dev/null | awk '/Depends: linux-image-/{print $2; exit}'); }
    [ -n "$pkg" ] || skip "apt does not know linux-image-rt-amd64 (no Debian archive?)"
    (cd "$cache" && apt-get download "$pkg" >/dev/null 2>&1) || skip "apt-get download $pkg failed"
    deb=$(ls "$cache"/"$pkg"_*.deb | head -n1)
    rm -rf "$cache/x" && mkdir -p "$cache/x"
    dpkg-deb -x "$deb" "$cache/x"
    cp "$cache"/x/boot/vmlinuz-* "$cache/"
    rm -rf "$cache/x" "$deb"
    kernel=$(ls "$cache"/vmlinuz-*-rt-amd64 | head -n1)
fi

# The initramfs: busybox and an init that traces and prints the result.
ird=$(mktemp -d)
trap 'rm -rf "$ird"' EXIT
mkdir -p "$ird"/{bin,proc,sys,dev,tmp}
cp "$busybox" "$ird/bin/busybox"
# cyclictest and rtla (Debian rt-tests, rtla), with their libraries, when
# the host has them: compared with our report over the same run.
for tool in cyclictest rtla; do
    p=$(command -v $tool || true)
    [ -n "$p" ] || continue
    mkdir -p "$ird/usr/bin"
    cp "$p" "$ird/usr/bin/"
    for lib in $(ldd "$p" 2>/dev/null | grep -o '/[^ ]*'); do
        mkdir -p "$ird$(dirname "$lib")"
        cp -L "$lib" "$ird$lib"
    done
done
cat >"$ird/init" <<INIT
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null
mount -t tracefs nodev /sys/kernel/tracing
T=/sys/kernel/tracing
echo 4096 > \$T/buffer_size_kb
for e in irq/irq_handler_entry irq/irq_handler_exit irq/softirq_entry irq/softirq_exit \
         nmi/nmi_handler sched/sched_switch sched/sched_waking \
         osnoise/irq_noise osnoise/nmi_noise osnoise/softirq_noise osnoise/thread_noise \
         irq_vectors/local_timer_entry irq_vectors/local_timer_exit \
         irq_vectors/reschedule_entry irq_vectors/reschedule_exit \
         irq_vectors/call_function_entry irq_vectors/call_function_exit \
         irq_vectors/call_function_single_entry irq_vectors/call_function_single_exit \
         irq_vectors/irq_work_entry irq_vectors/irq_work_exit \
         preemptirq/irq_disable preemptirq/irq_enable \
         preemptirq/preempt_disable preemptirq/preempt_enable; do
    [ -e \$T/events/\$e/enable ] && echo 1 > \$T/events/\$e/enable
done
echo 1000 > \$T/osnoise/timerlat_period_us 2>/dev/null
echo timerlat > \$T/current_tracer
export PATH=/bin:/usr/bin
# load: two busy shells and a copy loop; cyclictest over the same interval
( while :; do :; done ) & b1=\$!
( while :; do dd if=/dev/zero of=/tmp/f bs=64k count=64 2>/dev/null; done ) & b2=\$!
ct=
if [ -x /usr/bin/cyclictest ]; then
    cyclictest -q -t2 -a -p95 -i1000 -m -D$secs > /tmp/cyclictest.txt 2>&1 & ct=\$!
fi
sleep $secs
echo 0 > \$T/tracing_on
[ -n "\$ct" ] && wait \$ct
cat \$T/trace > /tmp/trace.txt
stats=\$(for c in \$T/per_cpu/cpu*; do echo "\$c"; cat \$c/stats; done)
# rtla timerlat, same load, the same length, after our run (the timerlat
# tracer serves one user at a time on 6.1)
echo nop > \$T/current_tracer
if [ -x /usr/bin/rtla ]; then
    rtla timerlat top -q -d ${secs}s > /tmp/rtla.txt 2>&1
fi
kill \$b1 \$b2
echo ===RTGPU-TRACE-BEGIN===
gzip -c /tmp/trace.txt | base64
echo ===RTGPU-TRACE-END===
echo ===RTGPU-STATS-BEGIN===
echo "\$stats"
echo ===RTGPU-STATS-END===
echo ===RTGPU-CYCLICTEST-BEGIN===
cat /tmp/cyclictest.txt 2>/dev/null
echo ===RTGPU-CYCLICTEST-END===
echo ===RTGPU-RTLA-BEGIN===
cat /tmp/rtla.txt 2>/dev/null
echo ===RTGPU-RTLA-END===
uname -a
poweroff -f
INIT
chmod +x "$ird/init"
(cd "$ird" && find . | cpio -o -H newc 2>/dev/null | gzip -c) >"$cache/initrd.gz"

console="$cache/console.log"
timeout ${RTGPU_QEMU_TIMEOUT:-300} qemu-system-x86_64 -accel tcg,thread=multi -cpu max -smp 2 -m 1024 \
    -kernel "$kernel" -initrd "$cache/initrd.gz" \
    -append "console=ttyS0 quiet noirqdebug" -nographic -no-reboot </dev/null >"$console" 2>&1 \
    || { echo "qemu-rt-trace: qemu exited with $? (console in $console)" >&2; }
tr -d '\r' <"$console" | sed -n '/===RTGPU-TRACE-BEGIN===/,/===RTGPU-TRACE-END===/p' | sed '1d;$d' \
    | base64 -d | gunzip -c >"$out" || { echo "qemu-rt-trace: no trace in the console output ($console)" >&2; exit 1; }
tr -d '\r' <"$console" | sed -n '/===RTGPU-STATS-BEGIN===/,/===RTGPU-STATS-END===/p' | sed '1d;$d' >"$out.stats"
for part in CYCLICTEST RTLA; do
    tr -d '\r' <"$console" | sed -n "/===RTGPU-$part-BEGIN===/,/===RTGPU-$part-END===/p" | sed '1d;$d' \
        >"$out.$(echo $part | tr A-Z a-z).txt"
done
echo "qemu-rt-trace: $(wc -l <"$out") lines from $(basename "$kernel") in $out (buffer stats in $out.stats)"
