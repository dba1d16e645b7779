package nodespec

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// shellWords splits POSIX shell text into statements of words, understanding
// only what EnvBlock may produce: bare words of safe characters, '…'
// single-quoted strings and \x escapes outside quotes. Unquoted newlines end
// statements. Any other unquoted character that the shell would interpret
// ($ ` " ; & | < > ( ) * ? [ ] ~ # { } ! …) is an error: it would mean a
// value escaped its quoting.
func shellWords(s string) ([][]string, error) {
	var stmts [][]string
	var words []string
	var word strings.Builder
	inWord := false
	endWord := func() {
		if inWord {
			words = append(words, word.String())
			word.Reset()
			inWord = false
		}
	}
	for i := 0; i < len(s); {
		ch := s[i]
		switch {
		case ch == '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return nil, errors.New("unterminated single quote")
			}
			word.WriteString(s[i+1 : i+1+end])
			inWord = true
			i += end + 2
		case ch == '\\':
			if i+1 >= len(s) {
				return nil, errors.New("trailing backslash")
			}
			word.WriteByte(s[i+1])
			inWord = true
			i += 2
		case ch == ' ' || ch == '\t':
			endWord()
			i++
		case ch == '\n':
			endWord()
			if len(words) > 0 {
				stmts = append(stmts, words)
				words = nil
			}
			i++
		case ch == '=' || ch < utf8.RuneSelf && isShellSafe(rune(ch)):
			word.WriteByte(ch)
			inWord = true
			i++
		default:
			return nil, fmt.Errorf("unquoted %q at byte %d", ch, i)
		}
	}
	endWord()
	if len(words) > 0 {
		stmts = append(stmts, words)
	}
	return stmts, nil
}

// parseEnvBlock reads an EnvBlock back into name → value.
func parseEnvBlock(block string) (map[string]string, error) {
	stmts, err := shellWords(block)
	if err != nil {
		return nil, err
	}
	env := map[string]string{}
	for _, st := range stmts {
		if len(st) != 2 || st[0] != "export" {
			return nil, fmt.Errorf("statement %q is not `export NAME=value`", st)
		}
		name, value, ok := strings.Cut(st[1], "=")
		if !ok || !envNameRE.MatchString(name) {
			return nil, fmt.Errorf("bad assignment %q", st[1])
		}
		if _, dup := env[name]; dup {
			return nil, fmt.Errorf("duplicate %s", name)
		}
		env[name] = value
	}
	return env, nil
}

func TestParseEnvBlockRejectsUnquoted(t *testing.T) {
	for _, bad := range []string{"export A=$HOME\n", "export A=`id`\n", "export A=x;id\n", "export A='x\n", "export A=~\n"} {
		if _, err := parseEnvBlock(bad); err == nil {
			t.Errorf("parseEnvBlock(%q) accepted unquoted shell syntax", bad)
		}
	}
}

// FuzzEnvBlock: whatever the user's variable, Validate and EnvBlock never
// panic, and when the cluster validates, the block reads back to exactly
// Env: no value escapes its quotes.
func FuzzEnvBlock(f *testing.F) {
	for _, seed := range [][2]string{
		{"HF_TOKEN", "hf_abc"},
		{"A", "it's"},
		{"A", "'"},
		{"A", "''\\''"},
		{"A", "$HOME `id` $(id) ${X}"},
		{"A", "line1\nline2\n"},
		{"A", "\"double\" \\back"},
		{"A", ""},
		{"A", "~/x *.py [ab] {a,b} !! #c"},
		{"MASTER_ADDR", "1.2.3.4"},
		{"1BAD", "x"},
		{"A=B", "x"},
		{"A", "\x00"},
		{"A", "\xff\xfe"},
		{"_", "ü 世界"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, key, value string) {
		c := base()
		c.UserEnv = map[string]string{key: value}
		err := c.Validate()
		block := c.EnvBlock(1)
		if err != nil {
			return
		}
		got, perr := parseEnvBlock(block)
		if perr != nil {
			t.Fatalf("EnvBlock not safely quoted: %v\n%s", perr, block)
		}
		want := c.Env(1)
		if len(got) != len(want) {
			t.Fatalf("block has %d variables, Env %d:\n%s", len(got), len(want), block)
		}
		for _, e := range want {
			if got[e.Name] != e.Value {
				t.Fatalf("%s read back as %q, want %q", e.Name, got[e.Name], e.Value)
			}
		}
		if got[key] != value {
			t.Fatalf("user variable %s read back as %q, want %q", key, got[key], value)
		}
	})
}

// FuzzValidate: random shapes never make Validate or any generator panic,
// and a cluster that validates yields commands whose every word is plain
// (no shell syntax from the inputs).
func FuzzValidate(f *testing.F) {
	f.Add(2, 8, "vm", "none", "node-1", "10.77.0.2", "203.0.113.1", "ubuntu", 22, "ens1", 29500, "", "demo")
	f.Add(3, 1, "container", "ray", "n;id", "10.77.0.2", "", "root", 40022, "eth0", 0, "jump@gw:2222", "")
	f.Add(65, 3, "bare_metal", "kubernetes", "node-0", "bad", "h`id`", "Root", -1, "$(id)", 6443, "@", "x\ny")
	f.Add(4, 4, "bare_metal", "slurm", "node-1", "10.1.2.3", "2001:db8::5", "ubuntu", 22, "ib0", 23456, "u@[2001:db8::1]:22", "Big Cluster")
	f.Add(0, 0, "", "", "", "", "", "", 0, "", 0, "", "")
	f.Fuzz(func(t *testing.T, nodes, gpus int, kind, software, name1, ip1, public1, user1 string, port1 int, iface string, masterPort int, gateway, clusterName string) {
		if nodes > 200 {
			nodes = 200
		}
		c := Cluster{
			Name: clusterName, Software: software, MachineKind: kind, GPUsPerNode: gpus,
			CPUsPerNode: 8, MemoryGBPerNode: 32, Interface: iface, MasterPort: masterPort, Gateway: gateway,
			Nodes: DefaultNodes(nodes),
		}
		if len(c.Nodes) > 1 {
			c.Nodes[1] = Node{Rank: 1, Name: name1, PrivateIP: ip1, PublicHost: public1, SSHUser: user1, SSHPort: port1}
		}
		err := c.Validate()
		// Every generator must survive any input, valid or not.
		_ = c.Env(0)
		_ = c.EnvBlock(1)
		_ = c.Hostfile()
		cmds := c.Commands()
		ssh := c.SSH()
		_ = c.PrimarySSH()
		_ = c.SSHConfig()
		_ = c.SlurmConf()
		_ = c.GresConf()
		_ = c.RayStart(0)
		_ = c.RayStart(1)
		_ = c.Role(1)
		if err != nil {
			return
		}
		// Commands (scripts aside) are plain words, and $NODE_RANK.
		var texts []string
		for _, cmd := range []Command{cmds.Torchrun, cmds.Mpirun, cmds.DeepSpeed, cmds.NCCLAllReduce} {
			texts = append(texts, cmd.Text)
		}
		for _, s := range ssh {
			texts = append(texts, s.Command)
		}
		texts = append(texts, c.RayStart(0), c.RayStart(1), c.Hostfile())
		for _, text := range texts {
			text = strings.ReplaceAll(text, "$NODE_RANK", "NODE_RANK")
			text = strings.ReplaceAll(text, "~/hostfile", "HOME/hostfile")
			text = strings.NewReplacer("[", "", "]", "").Replace(text) // IPv6 brackets
			if _, err := shellWords(text); err != nil {
				t.Fatalf("generated command is not plain words (%v): %q", err, text)
			}
		}
		for line := range strings.Lines(c.SlurmConf()) {
			if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
				continue
			}
			if strings.ContainsAny(line, "\r#") || strings.Count(line, "\n") > 1 {
				t.Fatalf("slurm.conf line %q", line)
			}
		}
	})
}
