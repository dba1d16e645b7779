package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// X19, A2 (the CLI printed the whole API key): with CLUSTERDECK_API_KEY
// set, `--help` and a mistyped flag, at the gpu level and on a command,
// print the key masked to its display prefix and never whole.
func TestAbuseCLINeverPrintsTheAPIKey(t *testing.T) {
	const key = "cdk_abcdefgh234567abcdefgh234567abcd"
	getenv := func(name string) string {
		if name == "CLUSTERDECK_API_KEY" {
			return key
		}
		return ""
	}
	for _, args := range [][]string{
		{"--help"},
		{"--bogus"},
		{"clusters", "get", "--help"},
		{"clusters", "get", "cl_x", "--nodez", "3"},
		{"offers", "--acelerator", "H100_80GB"},
		{"--key", "cdk_zyxwvuts234567zyxwvuts234567zyxw", "clusters", "list", "--bogus"},
	} {
		var out, errOut bytes.Buffer
		_ = Run(context.Background(), args, getenv, &out, &errOut)
		all := out.String() + errOut.String()
		if strings.Contains(all, key) || strings.Contains(all, "cdk_zyxwvuts234567zyxwvuts234567zyxw") || strings.Contains(all, "234567abcd") {
			t.Errorf("%q printed the key:\n%s", args, all)
		}
		if strings.Contains(all, "-key key") && !strings.Contains(all, `(default cdk_abcdefgh…)`) &&
			!strings.Contains(all, `(default cdk_zyxwvuts…)`) {
			t.Errorf("%q: the key's default is not shown masked to its prefix:\n%s", args, all)
		}
	}
	if got := MaskKey(key); got != "cdk_abcdefgh…" {
		t.Errorf("MaskKey = %q", got)
	}
	if got := MaskKey("short"); strings.Contains(got, "short") {
		t.Errorf("a short key printed whole: %q", got)
	}
}
