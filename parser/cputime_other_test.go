//go:build !linux

package parser

import "testing"

// measureCPU runs the benchmark loop; thread CPU time is only measured on
// Linux.
func measureCPU(b *testing.B, _ int, loop func()) {
	for b.Loop() {
		loop()
	}
}
