package cli

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/clusterdeck/clusterdeck/models"
)

// docCommand is a `clusterdeck gpu …` line of a ```sh block of the README
// or a docs/ page: its page and line, and the words after "gpu".
type docCommand struct {
	where string
	args  []string
}

// docWords splits a documented command line as the shell would for these
// examples: quotes, backslash escapes, a # starting a word begins a comment.
func docWords(line string) []string {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote rune
	rs := []rune(line)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == '\\' && i+1 < len(rs):
			i++
			cur.WriteRune(rs[i])
			inWord = true
		case r == '#' && !inWord:
			return words
		case unicode.IsSpace(r):
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

func docCommands(t *testing.T) []docCommand {
	t.Helper()
	pages, _ := filepath.Glob("../../docs/*.md")
	pages = append(pages, "../../README.md")
	var out []docCommand
	for _, page := range pages {
		src, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		in, pending, start := false, "", 0
		for i, line := range strings.Split(string(src), "\n") {
			trimmed := strings.TrimSpace(line)
			if strings.HasPrefix(trimmed, "```") {
				in = trimmed == "```sh"
				continue
			}
			if !in || trimmed == "" {
				continue
			}
			if pending == "" {
				start = i + 1
			}
			if strings.HasSuffix(trimmed, "\\") {
				pending += strings.TrimSuffix(trimmed, "\\") + " "
				continue
			}
			words := docWords(pending + trimmed)
			pending = ""
			if len(words) > 1 && (words[0] == "./bin/clusterdeck" || words[0] == "clusterdeck") && words[1] == "gpu" {
				out = append(out, docCommand{where: strings.TrimPrefix(page, "../../") + ":" + itoa(start), args: words[2:]})
			}
		}
	}
	return out
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

// runnable turns a documented command into one that runs to its end against
// the deck: an optional [--flag] is given, the first of a|b alternatives
// taken, and what would follow for ever does not (--wait and --follow are
// dropped, logs reads the stored lines, top draws once). It reports false
// for what the deck cannot show (a private offer needs an operator's).
func runnable(args []string, id, quote, offer, env, envFile string) ([]string, bool) {
	var out []string
	for _, a := range args {
		a = strings.Trim(a, "[]")
		if i := strings.IndexByte(a, '|'); i > 0 && !strings.HasPrefix(a, "-") {
			a = a[:i]
		}
		switch {
		case a == "--wait" || a == "--follow":
			continue
		case strings.HasPrefix(a, "po_"):
			return nil, false
		case a == "cl_…":
			a = id
		case a == "qt_…":
			a = quote
		case a == "env_…":
			a = env
		case a == "evt_…":
			a = "0"
		case strings.HasPrefix(a, "sim:"):
			a = offer
		case strings.HasSuffix(a, ".env"):
			a = envFile
		}
		out = append(out, a)
	}
	if slices.Contains(out, "logs") && !slices.Contains(out, "--follow=false") {
		out = append(out, "--follow=false")
	}
	if slices.Contains(out, "top") {
		out = append(out, "--once")
	}
	return out, true
}

// refusedAsDocumented are the documented commands whose deck cluster (ready,
// every machine healthy) is refused, as the command's comment says it would
// be: the refusal still comes from the command and the route the page names.
var refusedAsDocumented = map[string]*regexp.Regexp{
	"replace": regexp.MustCompile(`not_replaceable|not down`),
	"recover": regexp.MustCompile(`nothing_to_recover|No machine is down`),
	"resume":  regexp.MustCompile(`not_stopped|not stopped`),
	"stop":    regexp.MustCompile(`stop_unsupported|cannot stop`),
}

// Every `clusterdeck gpu …` command of the README's and docs/' sh blocks
// runs against a real Clusterdeck (the deck: web over a migrated database,
// served over HTTP) with its placeholders filled in — a fresh ready
// cluster for cl_…, a quote for qt_…, the deck's offer, environment and an
// env file — and exits 0, or is refused the way its comment says. A
// documented command, flag or value that stops working fails here.
func TestDocsCommandsRunAgainstADeck(t *testing.T) {
	cmds := docCommands(t)
	if len(cmds) < 20 {
		t.Fatalf("found %d documented gpu commands: the scan is broken", len(cmds))
	}
	eachDeck(t, func(t *testing.T, d *deck) {
		ctx := context.Background()
		envFile := filepath.Join(t.TempDir(), "train.env")
		if err := os.WriteFile(envFile, []byte("# a comment\nexport HF_TOKEN=x\n\nWANDB_MODE=offline\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		out, errOut, code := d.gpu(t, "offers", "--accelerator", "H100_80GB", "--nodes", "2", "--json")
		offer := regexp.MustCompile(`"id":\s*"(sim:[^"]+)"`).FindStringSubmatch(out)
		if code != 0 || offer == nil {
			t.Fatalf("offers: %d %s %s", code, errOut, out)
		}
		if _, err := d.store.Deposit(ctx, d.org.ID, 100_000*models.Micro, "docs-deposit", "test"); err != nil {
			t.Fatal(err)
		}
		ran, skipped := 0, 0
		for i, c := range cmds {
			// Each command gets its own ready cluster, ended afterwards so
			// the organisation's quota and stock hold for the next.
			cl := d.launch(t, "docs-"+itoa(i))
			d.join(t, cl.ID, 2)
			q, err := d.store.CreateQuote(ctx, d.org.ID, d.env.ID, models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 2, GPUsPerNode: 8, Location: "us-east"})
			if err != nil {
				t.Fatal(err)
			}
			args, ok := runnable(c.args, cl.ID, q.ID, offer[1], d.env.ID, envFile)

			if !ok {
				skipped++
				continue
			}
			ran++
			out, errOut, code := d.gpu(t, args...)
			d.endAll(t)
			if code == 0 {
				continue
			}
			if re := refusedAsDocumented[args[min(1, len(args)-1)]]; re != nil && code != exitUsage && re.MatchString(errOut) {
				continue
			}
			t.Errorf("%s: clusterdeck gpu %s exits %d\nstderr: %s\nstdout: %s", c.where, strings.Join(args, " "), code, errOut, out)
		}
		if skipped > 2 {
			t.Errorf("%d documented commands skipped: more than the private offer's two", skipped)
		}
		t.Logf("%d documented commands run, %d skipped (a private offer needs an operator's)", ran, skipped)
	})
}

// endAll ends every cluster of the deck's organisation at once, machines
// released, as the terminate job would.
func (d *deck) endAll(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	cls, err := d.store.ClustersForOrg(ctx, d.org.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cls {
		if c.Status.Terminal() {
			continue
		}
		if _, err := d.store.RequestTerminate(ctx, d.org.ID, c.ID, "test"); err != nil {
			t.Fatal(err)
		}
		if _, err := d.store.MarkTerminated(ctx, c.ID); err != nil {
			t.Fatal(err)
		}
	}
}
