package web

import (
	"net/http"
	"net/url"
	"testing"
)

// The sign-up and log-in forms answer any input with a page (303, 422 or
// 429), never a 500 or a panic.
func FuzzSignupAndLoginForms(f *testing.F) {
	f.Add("ada@example.com", "Ada", "correct horse battery", "Ada Labs", "", "/settings")
	f.Add("A <a@b.c>", "\x00\xff", "short", "\u202e", "tok", "//evil")
	f.Add("", "", "", "", "not-a-token", "")
	app := newTestApp(f, openSQLite(f))
	c := app.client()
	f.Fuzz(func(t *testing.T, email, name, password, org, invite, next string) {
		c.t, app.t = t, t
		rec := c.post("/signup", url.Values{"email": {email}, "name": {name}, "password": {password},
			"org_name": {org}, "invite": {invite}, "next": {next}})
		switch rec.Code {
		case http.StatusSeeOther, http.StatusUnprocessableEntity, http.StatusNotFound, http.StatusTooManyRequests:
		default:
			t.Errorf("signup answered %d", rec.Code)
		}
		rec = c.post("/login", url.Values{"email": {email}, "password": {password}, "next": {next}})
		switch rec.Code {
		case http.StatusSeeOther, http.StatusUnprocessableEntity, http.StatusTooManyRequests:
			if loc := location(rec); rec.Code == http.StatusSeeOther && safeNext(loc) == "" {
				t.Errorf("log-in redirected off-site to %q", loc)
			}
		default:
			t.Errorf("login answered %d", rec.Code)
		}
	})
}
