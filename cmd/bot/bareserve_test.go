package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
)

// bareServeEnv makes the test binary run bareServe instead of the tests,
// with "ADDR\x1fAGENT\x1fLOG".
const bareServeEnv = "GOLEM_TEST_BARE_SERVE"

// bareServe is the least an HTTP server can do to answer a chat with the
// fake agent: POST /v1/chat starts it with the text as its prompt, reads
// its output to the end and answers done, as a stream. It is the floor for
// a request to a CLI having started (BenchmarkBareServe); it serves until
// it is killed.
func bareServe(spec string) {
	addr, rest, _ := strings.Cut(spec, "\x1f")
	agent, log, _ := strings.Cut(rest, "\x1f")
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(http.ResponseWriter, *http.Request) {})
	mux.HandleFunc("POST /v1/chat", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Text string `json:"text"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		cmd := exec.Command(agent, "-p", req.Text, "--output-format", "stream-json", "--verbose", "--include-partial-messages")
		cmd.Env = append(os.Environ(), "FAKE_AGENT_LOG="+log)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		w.Header().Set("Content-Type", "text/event-stream")
		if _, err := cmd.Output(); err != nil {
			fmt.Fprintf(w, "data: {\"type\":\"error\",\"message\":%q}\n\n", err.Error())
			return
		}
		fmt.Fprint(w, "data: {\"type\":\"done\"}\n\n")
	})
	fmt.Fprintln(os.Stderr, http.ListenAndServe(addr, mux))
	os.Exit(1)
}
