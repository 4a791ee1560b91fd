package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/golem-chat/golem/engine/enginetest"
	"github.com/golem-chat/golem/parser"
)

// bareStreamEnv makes the test binary run serveBareStream instead of the
// tests, with "ADDR\x1fAGENT".
const bareStreamEnv = "GOLEM_TEST_BARE_STREAM"

// serveBareStream is the floor of the HTTP stream's benchmarks: a plain
// Go HTTP server that answers POST /v1/chat as golem does (the fake agent
// run with the prompt, its lines parsed by golem's parser, one SSE frame
// per event, written and flushed per read; the stream ends after the
// terminal event, the process waited for afterwards) and nothing else: no
// store, no queue, no coalescing. It serves until SIGTERM.
func serveBareStream(spec string) int {
	addr, agent, _ := strings.Cut(spec, "\x1f")
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })
	mux.HandleFunc("POST /v1/chat", func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Conversation, Text string }
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		cmd := exec.Command(agent, "-p", req.Text, "--output-format", "stream-json", "--verbose", "--include-partial-messages")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		out, err := cmd.StdoutPipe()
		if err == nil {
			err = cmd.Start()
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		defer func() { go cmd.Wait() }()
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		guard := parser.NewGuard(parser.NewClaudeCode())
		br := bufio.NewReaderSize(out, 64<<10)
		var frame []byte
		for {
			line, err := br.ReadSlice('\n')
			end := false
			for _, ev := range guard.Parse(line) {
				b, _ := ev.MarshalJSON()
				frame = append(append(append(frame, "data: "...), b...), "\n\n"...)
				end = end || ev.Terminal()
			}
			if len(frame) > 0 && (end || br.Buffered() == 0 || err != nil) {
				if _, werr := w.Write(frame); werr != nil || rc.Flush() != nil {
					return
				}
				frame = frame[:0]
			}
			if end || errors.Is(err, io.EOF) {
				return
			}
			if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
				return
			}
		}
	})
	srv := &http.Server{Addr: addr, Handler: mux}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, os.Interrupt)
	go func() { <-stop; srv.Close() }()
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return 1
	}
	return 0
}

// startBareStream starts serveBareStream as a process of its own, as
// startLoadBot starts the bot.
func startBareStream(b *testing.B) *loadBot {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	lb := &loadBot{base: "http://" + addr, agent: enginetest.Build(b)}
	lb.cmd = startServer(b, lb.base, bareStreamEnv+"="+addr+"\x1f"+lb.agent)
	return lb
}

// BenchmarkBareResultToClose is the floor of BenchmarkServeResultToClose:
// the same chats against serveBareStream.
func BenchmarkBareResultToClose(b *testing.B) {
	for _, conc := range []int{1, 20} {
		b.Run("chats="+strconv.Itoa(conc), func(b *testing.B) {
			resultToClose(b, startBareStream(b), conc)
		})
	}
}

// BenchmarkBareStreamCPU is BenchmarkServeStreamCPU against
// serveBareStream, which writes once per read of the pipe (no
// coalescing): what a plain Go server pays per line.
func BenchmarkBareStreamCPU(b *testing.B) {
	streamCPU(b, startBareStream(b))
}
