package web

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/clusterdeck/clusterdeck/models"
	"golang.org/x/crypto/bcrypt"
)

func init() { models.PasswordCost = bcrypt.MinCost }

const testPassword = "correct horse battery"

// account is a user seeded straight into the store, with their org (where
// they have role) and its default environment.
type account struct {
	user models.User
	org  models.Org
	env  models.Environment
	role models.Role
}

// signupAccount creates a user who owns a new organisation.
func (a *testApp) signupAccount(email, orgName string) account {
	a.t.Helper()
	ctx := context.Background()
	u, org, err := a.store.Signup(ctx, models.SignupInput{Email: email, Name: "Name of " + email,
		Password: testPassword, OrgName: orgName}, "192.0.2.1")
	if err != nil {
		a.t.Fatalf("signup %s: %v", email, err)
	}
	env, err := a.store.DefaultEnvironment(ctx, org.ID)
	if err != nil {
		a.t.Fatal(err)
	}
	return account{user: u, org: org, env: env, role: models.RoleOwner}
}

// joinAccount creates a user (with an org of their own) and adds them to
// owner's org with role, through an accepted invitation.
func (a *testApp) joinAccount(owner account, email string, role models.Role) account {
	a.t.Helper()
	ctx := context.Background()
	acc := a.signupAccount(email, "Own org of "+email)
	_, token, err := a.store.CreateInvite(ctx, owner.org.ID, models.RoleOwner, owner.user.ID, email, role)
	if err != nil {
		a.t.Fatal(err)
	}
	if _, err := a.store.AcceptInvite(ctx, token, acc.user, ""); err != nil {
		a.t.Fatal(err)
	}
	return account{user: acc.user, org: owner.org, env: owner.env, role: role}
}

// client is a browser: it keeps cookies, sends the CSRF token with unsafe
// requests, and comes from one address.
type client struct {
	t   testing.TB
	app *testApp
	jar map[string]*http.Cookie
	ip  string
}

func (a *testApp) client() *client {
	return &client{t: a.t, app: a, jar: map[string]*http.Cookie{}, ip: "192.0.2.10"}
}

// login signs acc in (in acc's org) and returns the browser.
func (a *testApp) login(acc account) *client {
	a.t.Helper()
	c := a.client()
	rec := c.post("/login", url.Values{"email": {acc.user.Email}, "password": {testPassword}})
	if rec.Code != http.StatusSeeOther {
		a.t.Fatalf("login %s: status %d\n%s", acc.user.Email, rec.Code, rec.Body)
	}
	if acc.org.ID != "" {
		if rec := c.post("/orgs/"+acc.org.ID+"/switch", nil); rec.Code != http.StatusSeeOther {
			a.t.Fatalf("switch to %s: %d", acc.org.ID, rec.Code)
		}
	}
	return c
}

func (c *client) cookie(name string) string {
	if ck, ok := c.jar[name]; ok {
		return ck.Value
	}
	return ""
}

// token returns the CSRF token, fetching a page first if there is none yet.
func (c *client) token() string {
	if c.cookie(csrfCookie) == "" {
		c.get("/login")
	}
	return c.cookie(csrfCookie)
}

func (c *client) do(req *http.Request) *httptest.ResponseRecorder {
	c.t.Helper()
	req.RemoteAddr = c.ip + ":4321"
	for _, ck := range c.jar {
		req.AddCookie(ck)
	}
	rec := c.app.do(req)
	for _, ck := range rec.Result().Cookies() {
		if ck.MaxAge < 0 || ck.Value == "" {
			delete(c.jar, ck.Name)
			continue
		}
		c.jar[ck.Name] = ck
	}
	return rec
}

func (c *client) get(path string, headers ...string) *httptest.ResponseRecorder {
	c.t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return c.do(req)
}

// post sends a form with the CSRF token (unless form already has _csrf).
func (c *client) post(path string, form url.Values, headers ...string) *httptest.ResponseRecorder {
	c.t.Helper()
	form = cloneValues(form)
	if _, ok := form["_csrf"]; !ok {
		form.Set("_csrf", c.token())
	}
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return c.do(req)
}

// apiGet calls the API with a bearer token.
func (a *testApp) apiGet(path, token string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return a.do(req)
}

func location(rec *httptest.ResponseRecorder) string { return rec.Header().Get("Location") }

// auditActions lists the org's audit actions, newest first.
func (a *testApp) auditActions(orgID string) []string {
	a.t.Helper()
	recs, _, err := a.store.AuditRecords(context.Background(), orgID, 0, 500)
	if err != nil {
		a.t.Fatal(err)
	}
	var out []string
	for _, r := range recs {
		out = append(out, r.Action)
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func cloneValues(v url.Values) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	return out
}
