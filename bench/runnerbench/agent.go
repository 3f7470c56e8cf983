package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// runAgent is a minimal stream-json agent for benchmarks: it answers
// initialize and, for each user line, prints BENCH_N assistant messages of
// BENCH_SIZE text bytes, each stamped with its emission time ("ts", Unix
// nanoseconds), then a result. BENCH_PACE_US spaces messages out so latency
// is measured without queueing.
func runAgent() int {
	n := envInt("BENCH_N", 1000)
	size := envInt("BENCH_SIZE", 100)
	pace := time.Duration(envInt("BENCH_PACE_US", 0)) * time.Microsecond
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 64<<20)
	out := bufio.NewWriterSize(os.Stdout, 1<<20)
	text := strings.Repeat("x", size)
	for in.Scan() {
		var msg struct {
			Type      string `json:"type"`
			RequestID string `json:"request_id"`
		}
		if json.Unmarshal(in.Bytes(), &msg) != nil {
			continue
		}
		switch msg.Type {
		case "control_request":
			fmt.Fprintf(out, `{"type":"control_response","response":{"subtype":"success","request_id":%q,"response":{}}}`+"\n", msg.RequestID)
			out.Flush()
		case "user":
			turn(out, n, text, pace)
		}
	}
	out.Flush()
	return 0
}

func turn(out *bufio.Writer, n int, text string, pace time.Duration) {
	fmt.Fprintln(out, `{"type":"system","subtype":"init","session_id":"bench","model":"bench","tools":[]}`)
	for i := range n {
		fmt.Fprintf(out, `{"type":"assistant","ts":%d,"message":{"id":"m%d","role":"assistant","model":"bench","content":[{"type":"text","text":"%s"}]},"parent_tool_use_id":null,"session_id":"bench"}`+"\n",
			time.Now().UnixNano(), i, text)
		if pace > 0 {
			out.Flush()
			time.Sleep(pace)
		}
	}
	fmt.Fprintln(out, `{"type":"result","subtype":"success","is_error":false,"num_turns":1,"result":"done","session_id":"bench","total_cost_usd":0,"usage":{"input_tokens":1,"output_tokens":1}}`)
	out.Flush()
}

func envInt(key string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(key)); err == nil {
		return v
	}
	return def
}
