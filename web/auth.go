package web

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/views"
	"github.com/labstack/echo/v4"
)

// afterLogin is where log-in and sign-up land without a ?next=.
const afterLogin = "/offers"

type loginForm struct {
	Email    string `form:"email"`
	Password string `form:"password"`
	Next     string `form:"next"`
}

type signupForm struct {
	Email    string `form:"email"`
	Name     string `form:"name"`
	Password string `form:"password"`
	OrgName  string `form:"org_name"`
	Next     string `form:"next"`
	Invite   string `form:"invite"`
}

// showLogin is GET /login.
func (h *handler) showLogin(c echo.Context) error {
	next := safeNext(c.QueryParam("next"))
	if p := principal(c); p != nil && p.User != nil {
		return c.Redirect(http.StatusSeeOther, orDefault(next, afterLogin))
	}
	p := views.LoginPage{Meta: h.meta(c, "Log in"), Next: next, Intent: h.intent(c, next)}
	return page(c, http.StatusOK, views.LoginPageView(p), views.LoginForm(p))
}

// login is POST /login: throttled per account and per address (in the
// database, so across instances), then the password; on success a fresh
// session and CSRF token (no fixation).
func (h *handler) login(c echo.Context) error {
	var f loginForm
	if err := c.Bind(&f); err != nil {
		return echo.NewHTTPError(http.StatusBadRequest)
	}
	ctx := c.Request().Context()
	f.Email, f.Next = models.NormalizeEmail(f.Email), safeNext(f.Next)
	p := views.LoginPage{Meta: h.meta(c, "Log in"), Email: f.Email, Next: f.Next, Intent: h.intent(c, f.Next), Problems: map[string]string{}}
	if models.EmailProblem(f.Email) != "" {
		p.Problems["email"] = "Enter the email address you signed up with."
	}
	if f.Password == "" {
		p.Problems["password"] = "Enter your password."
	}
	if len(p.Problems) > 0 {
		return page(c, http.StatusUnprocessableEntity, views.LoginPageView(p), views.LoginForm(p))
	}
	ip := c.RealIP()
	// The attempt is counted before the password is checked (A1):
	// parallel guesses cannot outrun the throttle.
	block, err := h.Store.ReserveLoginAttempt(ctx, f.Email, ip)
	if err != nil {
		return err
	}
	if block != nil {
		p.Blocked = throttled(c, *block, h.Store.Now())
		return page(c, http.StatusTooManyRequests, views.LoginPageView(p), views.LoginForm(p))
	}
	u, err := h.Store.Authenticate(ctx, f.Email, f.Password)
	if errors.Is(err, models.ErrBadCredentials) {
		if err := h.auditFailedLogin(c, f.Email, ip); err != nil {
			return err
		}
		p.Problems["password"] = "The email or the password is wrong."
		return page(c, http.StatusUnprocessableEntity, views.LoginPageView(p), views.LoginForm(p))
	}
	if err != nil {
		return err
	}
	if err := h.Store.ReleaseLoginAttempt(ctx, f.Email, ip); err != nil {
		return err
	}
	if err := h.Store.EnsureOrg(ctx, u, h.Config.DefaultMaxMachines, h.Config.DefaultMaxGPUs); err != nil {
		return err
	}
	sc, err := h.Store.LoadSession(ctx, u.ID, u.SessionVersion, "", "")
	if err != nil {
		return err
	}
	if err := h.Store.AuditLog(ctx, models.AuditEntry{OrgID: sc.Org.ID, UserID: u.ID, Actor: u.Email,
		Action: "user.login", Target: u.Email, IP: ip}); err != nil {
		return err
	}
	if err := h.startSession(c, u, sc.Org.ID, sc.Env.ID); err != nil {
		return err
	}
	return redirect(c, orDefault(f.Next, afterLogin))
}

// intent says, from where log-in or sign-up returns to, what the visitor
// was about to do — "launch 2 × 8 × H100 80GB in Ashburn, VA, US", "request
// a quote for 4 × 8 × H100 80GB" — so the form can say it (O3); ""
// for anything else.
func (h *handler) intent(c echo.Context, next string) string {
	u, err := url.Parse(next)
	if err != nil || next == "" {
		return ""
	}
	q := u.Query()
	switch u.Path {
	case "/clusters/new":
		if q.Get("private") != "" {
			return "launch your organisation's private offer"
		}
		nodes, err := strconv.Atoi(q.Get("nodes"))
		o, oerr := h.Store.OfferByID(c.Request().Context(), q.Get("offer"))
		if err != nil || oerr != nil || nodes < 1 {
			return "launch a cluster"
		}
		return "launch " + views.Shape(nodes, o.GPUsPerNode, o.Accelerator) + " in " + o.LocationName
	case "/quote-requests/new":
		accel := q.Get("accelerator")
		if !slices.Contains(models.Accelerators, accel) {
			return "request a quote for reserved capacity"
		}
		what := views.AcceleratorLabel(accel)
		switch nodes, gpus := atoi(q.Get("nodes")), atoi(q.Get("gpus_per_node")); {
		case nodes > 0 && gpus > 0:
			what = views.Shape(nodes, gpus, accel)
		case nodes > 0:
			what = strconv.Itoa(nodes) + " machines of " + what
		}
		return "request a quote for " + what
	}
	return ""
}

// auditFailedLogin records a failed log-in for an existing account in each
// of its organisations' logs (unknown emails are only throttled).
func (h *handler) auditFailedLogin(c echo.Context, email, ip string) error {
	ctx := c.Request().Context()
	u, err := h.Store.UserByEmail(ctx, email)
	if errors.Is(err, models.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	orgs, err := h.Store.OrgsForUser(ctx, u.ID)
	if err != nil {
		return err
	}
	for _, o := range orgs {
		if err := h.Store.AuditLog(ctx, models.AuditEntry{OrgID: o.OrgID, UserID: u.ID, Actor: email,
			Action: "user.login_failed", Target: email, IP: ip}); err != nil {
			return err
		}
	}
	return nil
}

// signupThrottled counts a sign-up attempt from the caller's address, or
// returns why it is refused (A1: sign-up is throttled like log-in).
func (h *handler) signupThrottled(c echo.Context) (string, error) {
	block, err := h.Store.ReserveSignup(c.Request().Context(), c.RealIP())
	if err != nil || block == nil {
		return "", err
	}
	throttled(c, *block, h.Store.Now())
	wait := int(block.Wait(h.Store.Now()).Round(time.Minute).Minutes())
	return fmt.Sprintf("Too many sign-ups from your network address. Try again in %d minute%s.", max(wait, 1), plural(max(wait, 1))), nil
}

// throttled sets Retry-After for a refused attempt and returns its message.
func throttled(c echo.Context, b models.LoginBlock, now time.Time) string {
	wait := b.Wait(now)
	c.Response().Header().Set("Retry-After", strconv.Itoa(int(wait.Round(time.Second).Seconds())+1))
	return blockedMessage(b, wait)
}

func blockedMessage(b models.LoginBlock, wait time.Duration) string {
	who := "this account"
	if b.ByIP {
		who = "your network address"
	}
	if b.Locked {
		mins := int(wait.Round(time.Minute).Minutes())
		if mins < 1 {
			mins = 1
		}
		return fmt.Sprintf("Too many failed log-ins for %s: log-in is locked for %d more minute%s. "+
			"If you forgot your password, reset it by mail (Forgot your password? below).", who, mins, plural(mins))
	}
	secs := int(wait.Round(time.Second).Seconds())
	if secs < 1 {
		secs = 1
	}
	return fmt.Sprintf("Too many failed log-ins for %s. Wait %d second%s and try again.", who, secs, plural(secs))
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// logout is POST /logout: the session is recorded as ended on the server
// (a copied cookie stops working too), the cookie is replaced by an empty
// session and the CSRF token rotates.
func (h *handler) logout(c echo.Context) error {
	if p := principal(c); p != nil && p.User != nil {
		if err := h.Store.AuditLog(c.Request().Context(), h.auditEntry(c, "user.logout", p.User.Email, "")); err != nil {
			return err
		}
	}
	if err := h.endServerSession(c); err != nil {
		return err
	}
	if err := h.endSession(c, "You are logged out."); err != nil {
		return err
	}
	return redirect(c, "/login")
}

// showSignup is GET /signup (with ?invite=TOKEN from an invitation).
func (h *handler) showSignup(c echo.Context) error {
	if p := principal(c); p != nil && p.User != nil {
		if tok := c.QueryParam("invite"); tok != "" {
			return c.Redirect(http.StatusSeeOther, "/invites/"+url.PathEscape(tok))
		}
		return c.Redirect(http.StatusSeeOther, afterLogin)
	}
	p := views.SignupPage{Meta: h.meta(c, "Sign up"), Form: views.SignupFields{Next: safeNext(c.QueryParam("next"))}}
	p.Intent = h.intent(c, p.Form.Next)
	if tok := c.QueryParam("invite"); tok != "" {
		inv, org, err := h.Store.InviteByToken(c.Request().Context(), tok)
		if err != nil {
			return err
		}
		p.Invite = inviteInfo(inv, org)
		p.Form.Email, p.Form.InviteToken = inv.Email, tok
	}
	return page(c, http.StatusOK, views.SignupPageView(p), views.SignupForm(p))
}

// signup is POST /signup: a user, their organisation (or the inviting one)
// and its default environment; then signed in like a log-in.
func (h *handler) signup(c echo.Context) error {
	var f signupForm
	if err := c.Bind(&f); err != nil {
		return echo.NewHTTPError(http.StatusBadRequest)
	}
	ctx := c.Request().Context()
	in := models.SignupInput{Email: f.Email, Name: f.Name, Password: f.Password, OrgName: f.OrgName,
		InviteToken: f.Invite, MaxMachines: h.Config.DefaultMaxMachines, MaxGPUs: h.Config.DefaultMaxGPUs}
	in.Normalize()
	p := views.SignupPage{Meta: h.meta(c, "Sign up"), Form: views.SignupFields{Email: in.Email, Name: in.Name,
		OrgName: in.OrgName, Next: safeNext(f.Next), InviteToken: in.InviteToken}}
	p.Intent = h.intent(c, p.Form.Next)
	if msg, err := h.signupThrottled(c); err != nil || msg != "" {
		if err != nil {
			return err
		}
		p.Problems = map[string]string{"email": msg}
		return page(c, http.StatusTooManyRequests, views.SignupPageView(p), views.SignupForm(p))
	}
	if in.InviteToken != "" {
		inv, org, err := h.Store.InviteByToken(ctx, in.InviteToken)
		if err != nil {
			return err
		}
		p.Invite = inviteInfo(inv, org)
		if in.Email != inv.Email {
			p.Problems = map[string]string{"email": "This invitation is for " + inv.Email + "."}
			return page(c, http.StatusUnprocessableEntity, views.SignupPageView(p), views.SignupForm(p))
		}
	}
	u, org, err := h.Store.Signup(ctx, in, c.RealIP())
	var fe models.FieldErrors
	if errors.As(err, &fe) {
		p.Problems = fe
		return page(c, http.StatusUnprocessableEntity, views.SignupPageView(p), views.SignupForm(p))
	}
	if err != nil {
		return err
	}
	if in.InviteToken != "" {
		if err := h.Store.AuditLog(ctx, models.AuditEntry{OrgID: org.ID, UserID: u.ID, Actor: u.Email,
			Action: "member.join", Target: u.Email, IP: c.RealIP(), Detail: "signed up through an invitation"}); err != nil {
			return err
		}
	}
	if err := h.startSession(c, u, org.ID, ""); err != nil {
		return err
	}
	welcome := views.Flash{Message: "Welcome to Clusterdeck. Add an SSH key, then pick an offer."}
	if in.InviteToken == "" { // a new organisation starts with nothing to spend (B1, L2)
		bal, err := h.Store.Balance(ctx, org.ID)
		if err != nil {
			return err
		}
		welcome = views.Flash{Message: "Welcome to Clusterdeck. Your balance is " + models.USD(bal) +
			": add funds before you launch, then add an SSH key and pick an offer.", Href: topUpPath + "#add-funds", Action: "Add funds"}
	}
	_ = h.flash(c, views.FlashSuccess, encodeFlash(welcome))
	return redirect(c, orDefault(p.Form.Next, afterLogin))
}

func inviteInfo(inv models.Invite, org models.Org) *views.InviteInfo {
	return &views.InviteInfo{OrgName: org.Name, Role: string(inv.Role), Email: inv.Email, Expires: views.FormatTime(inv.ExpiresAt)}
}

// showInvite is GET /invites/{token}: the link from an invitation mail. The
// token is the capability; an unknown, used or expired one is 404.
func (h *handler) showInvite(c echo.Context) error {
	token := c.Param("token")
	inv, org, err := h.Store.InviteByToken(c.Request().Context(), token)
	if err != nil {
		return err
	}
	c.Response().Header().Set("Referrer-Policy", "no-referrer")
	p := views.InvitePage{Meta: h.meta(c, "Invitation"), Invite: *inviteInfo(inv, org), Token: token,
		SignupURL: "/signup?invite=" + url.QueryEscape(token),
		LoginURL:  "/login?next=" + url.QueryEscape("/invites/"+token)}
	if pr := principal(c); pr != nil && pr.User != nil {
		p.SignedIn = true
		if pr.User.Email != inv.Email {
			p.Problem = "This invitation was sent to another email address than yours (" + pr.User.Email +
				"). Log out and open the link again, or ask for an invitation to your address."
		}
	}
	return page(c, http.StatusOK, views.InvitePageView(p), views.InvitePageView(p))
}

// acceptInvite is POST /invites/{token}/accept (signed in).
func (h *handler) acceptInvite(c echo.Context) error {
	p := principal(c)
	inv, err := h.Store.AcceptInvite(c.Request().Context(), c.Param("token"), *p.User, c.RealIP())
	if errors.Is(err, models.ErrInviteEmail) {
		return echo.NewHTTPError(http.StatusForbidden, "This invitation was sent to another email address than yours.")
	}
	if err != nil {
		return err
	}
	if err := h.setSessionValues(c, map[string]string{"org": inv.OrgID, "env": ""}); err != nil {
		return err
	}
	_ = h.flash(c, views.FlashSuccess, "You joined the organisation as "+string(inv.Role)+".")
	return redirect(c, "/settings")
}

// trimForm is strings.TrimSpace for form values.
func trimForm(c echo.Context, name string) string { return strings.TrimSpace(c.FormValue(name)) }
