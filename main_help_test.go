package main

import (
	"context"
	"os"
	"runtime/debug"
	"strings"
	"testing"
)

// Every command answers --help with its usage and exit status 0, and does
// nothing else: no database, no keys, no server.
func TestCommandHelp(t *testing.T) {
	for _, args := range [][]string{
		{"serve", "--help"}, {"demo", "--help"}, {"migrate", "--help"}, {"migrate", "-h"},
		{"admin", "--help"}, {"admin", "help"}, {"agent", "--help"}, {"agent", "-h"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			dir := t.TempDir()
			env := map[string]string{"DATA_DIR": dir, "ADDR": "127.0.0.1:0"}
			ctx, cancel := context.WithCancel(context.Background())
			cancel() // were the command to serve, it would stop at once
			var stdout, stderr strings.Builder
			if err := run(ctx, args, func(k string) string { return env[k] }, &stdout, &stderr); err != nil {
				t.Fatalf("error %v (stderr %q)", err, stderr.String())
			}
			if !strings.Contains(stdout.String(), "Usage") || !strings.Contains(stdout.String(), "clusterdeck "+args[0]) {
				t.Errorf("stdout lacks the usage of %s:\n%s", args[0], stdout.String())
			}
			if entries, _ := os.ReadDir(dir); len(entries) > 0 {
				t.Errorf("--help acted: DATA_DIR now holds %v", entries)
			}
		})
	}
}

func TestServeRefusesArguments(t *testing.T) {
	err := run(context.Background(), []string{"serve", "now"}, func(string) string { return "" }, &strings.Builder{}, &strings.Builder{})
	if err == nil || !strings.Contains(err.Error(), "serve takes no arguments") {
		t.Errorf("serve now: %v", err)
	}
}

func TestVersion(t *testing.T) {
	info := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: module, Version: "v1.4.0"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.time", Value: "2026-11-30T12:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	got := versionText(info, true)
	for _, want := range []string{"clusterdeck v1.4.0\n", "commit abc123 (2026-11-30T12:00:00Z) with uncommitted changes\n", "go1.26.0 "} {
		if !strings.Contains(got, want) {
			t.Errorf("version lacks %q:\n%s", want, got)
		}
	}
	var stdout strings.Builder
	if err := run(context.Background(), []string{"version"}, func(string) string { return "" }, &stdout, &strings.Builder{}); err != nil || !strings.HasPrefix(stdout.String(), "clusterdeck ") {
		t.Errorf("clusterdeck version: %v %q", err, stdout.String())
	}
}
