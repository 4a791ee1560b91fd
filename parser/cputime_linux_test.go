package parser

import (
	"runtime"
	"syscall"
	"testing"
	"time"
)

// threadCPU returns the CPU time the calling OS thread has used.
func threadCPU() time.Duration {
	const rusageThread = 1 // RUSAGE_THREAD
	var ru syscall.Rusage
	if syscall.Getrusage(rusageThread, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// measureCPU runs the benchmark loop on a locked OS thread and reports the
// thread's CPU time per op ("cpu-ns/op") and, when bytesPerOp > 0, the
// throughput on that CPU time ("cpu-MB/s"). Unlike ns/op, these figures
// do not grow when other processes compete for the machine's cores.
func measureCPU(b *testing.B, bytesPerOp int, loop func()) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := threadCPU()
	n := 0
	for b.Loop() {
		loop()
		n++
	}
	cpu := threadCPU() - start
	if cpu <= 0 || n == 0 {
		return
	}
	perOp := float64(cpu.Nanoseconds()) / float64(n)
	b.ReportMetric(perOp, "cpu-ns/op")
	if bytesPerOp > 0 {
		b.ReportMetric(float64(bytesPerOp)/perOp*1e3, "cpu-MB/s")
	} else {
		b.ReportMetric(1e9/perOp, "cpu-ops/s")
	}
}
