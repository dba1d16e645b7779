package main

import (
	"strings"
	"testing"
)

// SALES_EMAIL (RQ2) defaults to sales@clusterdeck.local, is normalised, and
// refuses anything but one plain address.
func TestSalesEmailConfig(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	c, err := loadConfig(env(nil))
	if err != nil || c.SalesEmail != "sales@clusterdeck.local" {
		t.Errorf("default: %q %v", c.SalesEmail, err)
	}
	c, err = loadConfig(env(map[string]string{"SALES_EMAIL": " Deals@Example.com "}))
	if err != nil || c.SalesEmail != "deals@example.com" {
		t.Errorf("set: %q %v", c.SalesEmail, err)
	}
	for _, bad := range []string{"Sales <sales@example.com>", "a@example.com, b@example.com", "sales"} {
		if _, err := loadConfig(env(map[string]string{"SALES_EMAIL": bad})); err == nil || !strings.Contains(err.Error(), "SALES_EMAIL") {
			t.Errorf("%q: err = %v", bad, err)
		}
	}
}
