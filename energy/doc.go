// Package energy measures GPU-reported energy, power, VRAM, clocks, temperature
// and throttling over one measured window.
//
// A Sampler covers one window: Start takes a first sample and starts a
// goroutine that samples on a fixed period (default 50 ms); Stop takes a last
// sample, waits for the goroutine and folds the samples into a Window.
//
// Two implementations exist:
//
//   - NewNVML reads an NVIDIA GPU through NVML (github.com/NVIDIA/go-nvml; cgo,
//     linux only — nvml.go, built only with the nvml build tag: GPUBuild is
//     the command; nvml_stub.go otherwise, which reports "energy:
//     unavailable, built without NVML"). Energy is the delta of
//     NVML's total-energy counter (mJ) and is labelled GPU-reported (board
//     counter), never facility energy. It is cross-checked against the
//     integral of the power samples. With no driver the Window says
//     Available=false with the reason and Stop returns an error wrapping
//     ErrUnavailable: never zeros.
//   - NewSimulated applies a stated PowerModel to the simulated server's
//     GPU-busy time; every figure is labelled "simulated".
//
// Both feed the same analysis (analyse.go), which detects counter resets,
// windows below the counter's resolution, power/counter disagreement,
// throttling and read failures (gaps).
//
// The package does not know prices (package cost), requests or tokens beyond
// the counts handed to JPerToken/JPerRequest, nor which server runs on the GPU
// (the caller passes its PIDs).
package energy
