package report

// DefaultAliases maps our metric names to other tools' names for the same
// formula (DESIGN.md, "Metric definitions"), for Results.Aliases.
func DefaultAliases() map[string]string {
	return map[string]string{
		"ttft":          "TTFT in AIPerf, GenAI-Perf, GuideLLM, vLLM bench (measured from send)",
		"ttft_intended": "MLPerf LoadGen / wrk2 latency from the scheduled time (coordinated-omission safe)",
		"tpot":          "ITL in AIPerf, GenAI-Perf and GuideLLM; TPOT in vLLM bench",
		"itl":           "ICL in AIPerf; ITL in vLLM bench (one sample per gap between token events)",
		"e2e":           "request latency in AIPerf and GenAI-Perf; E2EL in vLLM bench",
		"ttfo":          "time to first answer (non-reasoning) token; TTFT where a tool ignores reasoning text",
	}
}
