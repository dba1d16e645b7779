package cli

import (
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"
)

// flagSet has the common flags; synopsis is the command's usage line.
func (c *gpuCLI) flagSet(name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	fs.StringVar(&c.api, "api", c.api, "Clusterdeck's `URL` (env CLUSTERDECK_API)")
	fs.Var(secretFlag{&c.key}, "key", "an API `key`, cdk_… (env CLUSTERDECK_API_KEY)")
	fs.BoolVar(&c.json, "json", c.json, "print the API's JSON instead of tables")
	fs.Usage = func() {
		fmt.Fprintf(c.stderr, "Usage: clusterdeck gpu %s\n\nFlags:\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses flags wherever they are among the arguments (`get ID
// --json` works) and returns the positional arguments. It stops at the
// first positional when maxPositional is 0 (the `gpu` level, whose
// positionals are subcommands with flags of their own).
func parseFlags(fs *flag.FlagSet, args []string, maxPositional int) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, Exit(exitUsage) // the flag package printed the problem and the usage
		}
		rest := fs.Args()
		consumed := len(args) - len(rest)
		if consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), checkPositional(fs, pos, rest, maxPositional)
		}
		if len(rest) == 0 {
			return pos, checkPositional(fs, pos, nil, maxPositional)
		}
		if maxPositional == 0 {
			return rest, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

func checkPositional(fs *flag.FlagSet, pos, extra []string, max int) error {
	if max > 0 && len(pos)+len(extra) > max {
		return usageError(fmt.Sprintf("%s: unexpected argument %q", fs.Name(), append(pos, extra...)[max]))
	}
	return nil
}

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// setFlags names the flags given on the command line.
func setFlags(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

// noArgs parses a command that takes flags only.
func noArgs(fs *flag.FlagSet, args []string, hint string) error {
	pos, err := parseFlags(fs, args, -1)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		msg := fmt.Sprintf("%s takes no arguments (got %q)", fs.Name(), pos[0])
		if hint != "" {
			msg += "; " + hint
		}
		return usageError(msg)
	}
	return nil
}

// oneID reads `command ID [flags]`.
func oneID(fs *flag.FlagSet, args []string) (string, error) {
	pos, err := parseFlags(fs, args, 1)
	if err != nil {
		return "", err
	}
	if len(pos) != 1 || strings.TrimSpace(pos[0]) == "" {
		return "", usageError(fs.Name() + ": give the cluster's id (cl_…); \"clusterdeck gpu clusters list\" lists them")
	}
	return strings.TrimSpace(pos[0]), nil
}

// waitFlags are --wait, --timeout and --poll-interval.
type waitFlags struct {
	wait          bool
	timeout, poll time.Duration
}

func (w *waitFlags) register(fs *flag.FlagSet, what string) {
	fs.BoolVar(&w.wait, "wait", false, "follow the cluster until it is "+what)
	fs.DurationVar(&w.timeout, "timeout", 30*time.Minute, "with --wait: give up following after this long (the cluster is left as it is)")
	fs.DurationVar(&w.poll, "poll-interval", 3*time.Second, "with --wait: how often to look at the cluster while the event stream is unavailable")
}

// secretFlag is the API key's flag.Value (X19, A2): help and flag errors
// show it masked to its display prefix, never whole.
type secretFlag struct{ p *string }

func (f secretFlag) String() string {
	if f.p == nil {
		return ""
	}
	return MaskKey(*f.p)
}

func (f secretFlag) Set(v string) error { *f.p = v; return nil }

// keyPrefixLen is an API key's display prefix: "cdk_" and 8 characters,
// as Settings → API keys shows it.
const keyPrefixLen = 12

// MaskKey is key as it may be printed: its display prefix and "…"; a key
// too short to have one shows at most its first half.
func MaskKey(key string) string {
	if key == "" {
		return ""
	}
	n := min(keyPrefixLen, len(key)/2)
	return key[:n] + "…"
}
