package executor

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbox/agentbox/sandbox/wire"
)

// TestMain doubles as a helper program that the traced commands run (a Go
// program: threads, and os/exec's vfork).
func TestMain(m *testing.M) {
	if mode := os.Getenv("EXECUTOR_TEST_HELPER"); mode != "" {
		helper(mode, os.Args[1:])
		return
	}
	if err := becomeReaper(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	os.Exit(m.Run())
}

func helper(mode string, args []string) {
	switch mode {
	case "setid-filter": // the filter, then the command: what a sandbox's commands get
		if err := installSetIDFilter(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		err := syscall.Exec("/bin/bash", []string{"bash", "-c", args[0]}, os.Environ())
		fmt.Fprintln(os.Stderr, "exec:", err)
		os.Exit(3)
	case "bash": // the same command without the filter (a control)
		err := syscall.Exec("/bin/bash", []string{"bash", "-c", args[0]}, os.Environ())
		fmt.Fprintln(os.Stderr, "exec:", err)
		os.Exit(3)
	case "spawn": // os/exec starts the child with clone(CLONE_VFORK|CLONE_VM)
		_ = exec.Command(args[0], args[1:]...).Run()
	case "thread-exec": // execve from a thread that is not the leader
		done := make(chan struct{})
		go func() {
			runtime.LockOSThread()
			err := syscall.Exec(args[0], args, os.Environ())
			fmt.Fprintln(os.Stderr, "exec:", err)
			close(done)
		}()
		<-done
		os.Exit(3)
	case "leader-exit": // the leader exits, another thread lives on
		runtime.LockOSThread()
		go func() {
			runtime.LockOSThread()
			time.Sleep(10 * time.Millisecond)
			_ = os.WriteFile(args[0], []byte(fmt.Sprint(os.Getpid())), 0o644)
			select {}
		}()
		syscall.RawSyscall(syscall.SYS_EXIT, 0, 0, 0)
	}
	os.Exit(0)
}

// denyJudge denies touch, and any argv mentioning DENYME; asks for "asky".
var denyJudge = JudgeFunc(func(argv []string) Decision {
	if path.Base(argv[0]) == "touch" {
		return Decision{Verdict: Deny, Rule: "commands.deny[0]", Reason: "touch is denied"}
	}
	if path.Base(argv[0]) == "asky" || slices.Contains(argv, "ASKME") {
		return Decision{Verdict: Ask, Rule: "commands.ask[0]"}
	}
	for _, a := range argv {
		if strings.Contains(a, "DENYME") {
			return Decision{Verdict: Deny, Rule: "commands.deny[1]"}
		}
	}
	return Decision{Verdict: Allow}
})

func testServer(t *testing.T) *Server {
	t.Helper()
	if os.Geteuid() != 0 && testing.Short() {
		t.Skip("ptrace tests")
	}
	s := &Server{judge: denyJudge, cap: 1 << 16, self: os.Getpid(), ooms: -1,
		descendantsOnly: true, testRoot: t.TempDir()}
	s.tracer = newTracer()
	t.Cleanup(func() {
		live := 0
		for pid := range s.sweepable() {
			if !zombie(pid) {
				live++
			}
		}
		if live > 0 {
			t.Errorf("processes left behind: %v", s.sweepable())
			s.killAllExcept(nil)
		}
	})
	return s
}

func run(t *testing.T, s *Server, cmd string) *wire.Response {
	t.Helper()
	resp := s.exec(&wire.Request{Command: cmd, TimeoutMS: 20_000})
	if resp.Error != "" {
		t.Fatalf("exec %q: %s", cmd, resp.Error)
	}
	return resp
}

func exists(s *Server, name string) bool {
	_, err := os.Lstat(filepath.Join(s.testRoot, name))
	return err == nil
}

func TestTraceAllowedRunsAndIsRecorded(t *testing.T) {
	s := testServer(t)
	resp := run(t, s, "ls / | wc -l; ls >/dev/null")
	if resp.ExitCode != 0 || len(resp.Execs) != 0 {
		t.Fatalf("exit %d, stopped %v, output %q", resp.ExitCode, resp.Execs, resp.Output)
	}
	got := map[string]int{}
	for _, p := range resp.Programs {
		got[p.Name] = p.Count
	}
	if got["ls"] != 2 || got["wc"] != 1 {
		t.Fatalf("programs: %v", resp.Programs)
	}
}

// setsidFork starts touch in a new session from a forked child and waits,
// with bash builtins only, until that child has been killed at its exec
// stop (gone or a zombie): a loop of fixed length could end the call before
// the child reaches its exec on a loaded machine.
const setsidFork = `setsid -f sh -c 'echo $$ > pid; exec touch m'
until [ -s pid ]; do :; done; read -r p < pid
while [ -e /proc/$p ]; do read -r st < /proc/$p/stat 2>/dev/null || break; st=${st##*) }; [ "${st%% *}" = Z ] && break; done
rm -f pid`

// Every way of starting a denied program is stopped before it runs: the
// marker it would create never exists.
func TestTraceDeniedNeverRuns(t *testing.T) {
	s := testServer(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.testRoot, "shebang"), []byte("#!/usr/bin/touch\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.testRoot, "script"), []byte("#!/bin/sh\ntouch m\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	helperEnv := "EXECUTOR_TEST_HELPER"
	cases := map[string]string{
		"direct":            "touch m",
		"last command exec": "exec touch m",
		"absolute":          "/usr/bin/touch m",
		"argv0 spoofed":     "exec -a ls touch m",
		"argv0 empty":       "exec -a '' touch m",
		"pipeline":          "echo | touch m | cat",
		"subshell":          "(touch m)",
		"double fork":       "( ( touch m; echo > done ) & ); until [ -e done ]; do :; done",
		"setsid":            "setsid touch m",
		"setsid fork":       setsidFork,
		"nohup":             "nohup touch m",
		"env wrapper":       "env touch m",
		"bash -c":           "bash -c 'touch m'",
		"shebang denied":    "./shebang m",
		"shebang script":    "./script",
		"sh script file":    "sh ./script",
		"argument denied":   "mkdir DENYME && mkdir m",
		"vfork (os/exec)":   helperEnv + "=spawn " + self + " /usr/bin/touch m",
		"exec from thread":  helperEnv + "=thread-exec " + self + " /usr/bin/touch m",
		"xargs":             "echo m | xargs touch",
		"find -exec":        "find . -maxdepth 0 -exec touch m \\;",
	}
	for name, cmd := range cases {
		t.Run(name, func(t *testing.T) {
			_ = os.Remove(filepath.Join(s.testRoot, "m"))
			_ = os.Remove(filepath.Join(s.testRoot, "DENYME"))
			_ = os.Remove(filepath.Join(s.testRoot, "done"))
			resp := run(t, s, cmd+"; echo after")
			if exists(s, "m") {
				t.Fatalf("the denied program ran: m exists; output %q", resp.Output)
			}
			if len(resp.Execs) == 0 {
				t.Fatalf("no stopped exec reported; output %q", resp.Output)
			}
			st := resp.Execs[0]
			if st.Verdict != "deny" || !strings.HasPrefix(st.Rule, "commands.deny") || st.PID <= 0 || len(st.Argv) == 0 {
				t.Fatalf("report: %+v", st)
			}
			if !strings.Contains(string(resp.Output), "after") && !strings.Contains(cmd, "exec ") {
				t.Fatalf("the script did not go on: %q", resp.Output)
			}
		})
	}
}

func TestTraceSpoofedArgv0JudgedAsExecutable(t *testing.T) {
	s := testServer(t)
	resp := run(t, s, "exec -a ls touch m")
	if len(resp.Execs) != 1 || !strings.HasSuffix(resp.Execs[0].Argv[0], "/touch") {
		t.Fatalf("report: %+v", resp.Execs)
	}
}

func TestTraceAskWithoutApproverDenies(t *testing.T) {
	s := testServer(t)
	resp := run(t, s, "mkdir ASKME m2; echo after")
	if exists(s, "m2") || len(resp.Execs) != 1 || resp.Execs[0].Verdict != "ask" {
		t.Fatalf("ask without approver: %+v, output %q", resp.Execs, resp.Output)
	}
}

func TestTraceTimeoutKillsEverything(t *testing.T) {
	s := testServer(t)
	resp := s.exec(&wire.Request{Command: "echo started; setsid sleep 100 & (sleep 100 &); sleep 100", TimeoutMS: 500})
	if !resp.TimedOut || resp.ExitCode != 124 || !strings.Contains(string(resp.Output), "started") {
		t.Fatalf("timeout: %+v", resp)
	}
	if left := s.sweepable(); len(left) > 0 {
		t.Fatalf("left: %v", left)
	}
	if r := run(t, s, "echo again"); strings.TrimSpace(string(r.Output)) != "again" {
		t.Fatalf("next call: %q", r.Output)
	}
}

func TestTraceForkBombHeldBelowLimit(t *testing.T) {
	s := testServer(t)
	s.taskLimit = 40
	resp := s.exec(&wire.Request{Command: "echo bomb; b() { b | b & }; b; sleep 100", TimeoutMS: 2000})
	if resp.ExitCode != 124 && resp.ExitCode != 0 {
		t.Fatalf("fork bomb: exit %d", resp.ExitCode)
	}
	if !strings.Contains(string(resp.Output), "bomb") {
		t.Fatalf("partial output lost: %q", resp.Output)
	}
	if len(resp.Alarms) == 0 || resp.Alarms[0].What != "pids" {
		t.Fatalf("no pids alarm: %+v", resp.Alarms)
	}
	if r := run(t, s, "echo again"); strings.TrimSpace(string(r.Output)) != "again" {
		t.Fatalf("next call: %q", r.Output)
	}
}

// A process whose thread-group leader exited looks like a zombie from the
// leader's state; the sweep still kills it.
func TestSweepKillsGroupWithDeadLeader(t *testing.T) {
	s := testServer(t)
	self, _ := os.Executable()
	resp := run(t, s, "EXECUTOR_TEST_HELPER=leader-exit "+self+" pidfile & for i in $(seq 2000); do [ -s pidfile ] && break; sleep 0.01; done; cat pidfile")
	pid := strings.TrimSpace(string(resp.Output))
	if pid == "" {
		t.Fatalf("helper did not start: %+v", resp)
	}
	if _, err := os.Stat("/proc/" + pid + "/task"); err == nil {
		t.Fatalf("process %s with a dead leader survived the call", pid)
	}
}
