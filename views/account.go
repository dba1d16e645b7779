package views

import (
	"net/url"
	"time"
)

// FormatTime shows a time in UTC, minutes precision ("2026-11-30 12:00 UTC").
func FormatTime(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04") + " UTC"
}

// FormatTimePtr is FormatTime for optional times; nil reads "never".
func FormatTimePtr(t *time.Time) string {
	if t == nil {
		return "never"
	}
	return FormatTime(*t)
}

// LoginPage is the log-in form. Blocked is the throttling message, if any.
type LoginPage struct {
	Meta     Meta
	Email    string
	Next     string
	Intent   string // what the visitor was about to do ("launch …"), from Next
	Problems map[string]string
	Blocked  string
}

// ForgotPasswordPage asks for the address to mail a reset link to; Sent
// once asked (the same answer whether or not an account has it).
type ForgotPasswordPage struct {
	Meta     Meta
	Email    string
	Problems map[string]string
	Blocked  string
	Sent     bool
}

// ResetPasswordPage sets a new password through a mailed link; Gone when
// the link is unknown, used or expired.
type ResetPasswordPage struct {
	Meta       Meta
	Token      string
	Email      string
	Problems   map[string]string
	Gone       bool
	RevokeKeys bool // the box "also revoke every API key" as sent
}

// SignupPage is the sign-up form (optionally through an invitation).
type SignupPage struct {
	Meta     Meta
	Intent   string // what the visitor was about to do, from Form.Next
	Form     SignupFields
	Problems map[string]string
	Invite   *InviteInfo // set when signing up through an invitation
}

// SignupFields is what the visitor typed (never the password).
type SignupFields struct {
	Email, Name, OrgName, Next, InviteToken string
}

// InviteInfo describes an invitation to the person who holds its link.
type InviteInfo struct {
	OrgName string
	Role    string
	Email   string
	Expires string
}

// InvitePage is /invites/{token}: join as the signed-in user, or sign up /
// log in first.
type InvitePage struct {
	Meta      Meta
	Invite    InviteInfo
	Token     string
	SignedIn  bool
	SignupURL string
	LoginURL  string
	Problem   string
}

// SettingsNav is the settings sub-navigation; team pages only for managers.
type SettingsNav struct {
	Active  string // "profile", "ssh-keys", "api-keys", "environments", "team", "webhooks", "audit"
	CanTeam bool
}

// SettingsLink is one item of the settings sub-navigation.
type SettingsLink struct {
	Key, Label, Href string
}

// Links lists the sub-navigation for this user.
func (n SettingsNav) Links() []SettingsLink {
	out := []SettingsLink{
		{"profile", "Profile", "/settings"},
		{"ssh-keys", "SSH keys", "/settings/ssh-keys"},
		{"api-keys", "API keys", "/settings/api-keys"},
		{"environments", "Environments", "/settings/environments"},
	}
	if n.CanTeam {
		out = append(out, SettingsLink{"team", "Team", "/settings/team"}, SettingsLink{"webhooks", "Webhooks", "/settings/webhooks"},
			SettingsLink{"audit", "Audit log", "/settings/audit"})
	}
	return out
}

// ProfilePage is /settings: name, password, sessions and organisations.
type ProfilePage struct {
	Meta             Meta
	Nav              SettingsNav
	Name             string
	Email            string
	Problems         map[string]string // profile form
	PasswordProblems map[string]string
	Orgs             []OrgChoice
}

// OrgChoice is one of the user's organisations.
type OrgChoice struct {
	ID, Name, Role string
	Current        bool
}

// SSHKeysPage is /settings/ssh-keys.
type SSHKeysPage struct {
	Meta     Meta
	Nav      SettingsNav
	Next     string // the launch page to return to once a key is added ("" for none)
	Keys     []SSHKeyRow
	Form     SSHKeyForm
	Problems map[string]string
}

// SSHKeyForm is the add-key form as typed.
type SSHKeyForm struct {
	Name, PublicKey string
}

// SSHKeyRow is one key in the list.
type SSHKeyRow struct {
	ID, Name, Type, Fingerprint, Added string
}

// APIKeysPage is /settings/api-keys. Created is set once, right after a key
// is made: the only time its token is shown.
type APIKeysPage struct {
	Meta     Meta
	Nav      SettingsNav
	Keys     []APIKeyRowView
	Envs     []EnvOption
	Form     APIKeyForm
	Problems map[string]string
	Created  *CreatedKey
}

// APIKeyForm is the new-key form as typed.
type APIKeyForm struct {
	Name, Environment string
}

// EnvOption is an environment in a select.
type EnvOption struct {
	ID, Name string
}

// APIKeyRowView is one key in the list.
type APIKeyRowView struct {
	ID, Name, Prefix, Env, CreatedBy, Created, LastUsed string
	Revoked, CanRevoke                                  bool
}

// CreatedKey is a key just made, with its token.
type CreatedKey struct {
	Name, Env, Token string
}

// EnvironmentsPage is /settings/environments.
type EnvironmentsPage struct {
	Meta      Meta
	Nav       SettingsNav
	Envs      []EnvRow
	CanCreate bool
	Name      string
	Problems  map[string]string
}

// EnvRow is one environment.
type EnvRow struct {
	ID, Name, Created string
	Default, Current  bool
}

// TeamPage is /settings/team (owners and admins).
type TeamPage struct {
	Meta     Meta
	Nav      SettingsNav
	OrgName  string
	Members  []MemberRow
	Invites  []InviteRow
	Form     InviteForm
	Roles    []string // roles this user may give
	Problems map[string]string
}

// InviteForm is the invite form as typed.
type InviteForm struct {
	Email, Role string
}

// MemberRow is one member; CanEdit when this user may change or remove them.
// OnlyOwner marks the organisation's single owner: changing their role or
// removing them would fail, so the page offers neither.
type MemberRow struct {
	UserID, Email, Name, Role, Joined string
	Self, CanEdit, OnlyOwner          bool
}

// InviteRow is a pending invitation.
type InviteRow struct {
	ID, Email, Role, Expires string
}

// AuditPage is /settings/audit (owners and admins).
type AuditPage struct {
	Meta    Meta
	Nav     SettingsNav
	Rows    []AuditRow
	NextURL string // older entries, "" when none
}

// AuditRow is one audit entry.
type AuditRow struct {
	When, Actor, Action, Target, IP, Detail string
}

// AdminPage is /admin: organisations and their quotas (operators).
type AdminPage struct {
	Meta             Meta
	Orgs             []AdminOrgRow
	NewQuoteRequests int // requests in the inbox no one has answered yet
	Providers        []AdminProviderRow
	Jobs             []AdminJobRow
	// The fleet's GPUs now (OP3): how many reported in the
	// last minutes, of how many clusters, and their mean utilization.
	FleetGPUs, FleetGPUClusters int
	FleetGPUUtilPct             int
}

// AdminProviderRow is one provider's stored catalog (OP2).
type AdminProviderRow struct {
	Name, Refreshed string
	Offers          int
	Stale           bool // older than the freshness window: its offers are not startable
	Enabled         bool // listed in PROVIDERS
	LastError       string
	Markup          string // percent as typed or stored, "12.5"
	MarkupSource    string // models.MarkupFromEnv (read-only here), MarkupFromOperator or MarkupFromDefault
	MarkupVar       string // the variable that sets it, "LAMBDA_MARKUP_PERCENT"
	KeyVar          string // "LAMBDA_API_KEY"; "" when the provider has no account key
	KeySet          bool
	RegionsVar      string // "LAMBDA_REGIONS"; "" when the provider has no such setting
	Regions         string // "us-east-1, us-west-1"; "" = every region
	Problems        map[string]string
	Saved           bool
}

// AdminJobRow is one job's last run (OP2).
type AdminJobRow struct {
	Name, LastRun, Duration, LastError string
	Runs, Failures                     int64
	Schedule                           string // cron spec, "@every 1m"
	CanRun                             bool   // this process runs jobs: "run now" works
}

// AdminOrgRow is one organisation; MaxMachines/MaxGPUs are as typed.
type AdminOrgRow struct {
	ID, Name, Created    string
	Members              int
	MaxMachines, MaxGPUs string
	MaxVolumes           string // live volumes; the default shown when not set
	MaxVolumeGB          string // GB of live volumes together
	Problems             map[string]string
}

// MailboxPage is the development mailbox.
type MailboxPage struct {
	Meta  Meta
	Mails []MailRow
	SMTP  bool // mail goes out by SMTP: this page only shows the outbox
}

// MailRow is one outbox mail.
type MailRow struct {
	ID, To, Subject, Key, Status, Transport, Created, Sent, LastError string
}

// MailPage is one mail of the development mailbox.
type MailPage struct {
	Meta Meta
	Mail MailRow
	Text string
	HTML string
}

func roleLabel(r string) string {
	switch r {
	case "owner":
		return "Owner"
	case "admin":
		return "Admin"
	case "member":
		return "Member"
	}
	return r
}

func roleClass(r string) string {
	switch r {
	case "owner":
		return "rounded px-1.5 py-0.5 text-xs font-medium bg-indigo-50 text-indigo-800 ring-1 ring-indigo-200 dark:bg-indigo-950 dark:text-indigo-200 dark:ring-indigo-800"
	case "admin":
		return "rounded px-1.5 py-0.5 text-xs font-medium bg-sky-50 text-sky-800 ring-1 ring-sky-200 dark:bg-sky-950 dark:text-sky-200 dark:ring-sky-800"
	}
	return "rounded px-1.5 py-0.5 text-xs font-medium bg-slate-100 text-slate-700 ring-1 ring-slate-200 dark:bg-slate-800 dark:text-slate-200 dark:ring-slate-700"
}

func mailStatusClass(s string) string {
	switch s {
	case "sent":
		return "rounded px-1.5 py-0.5 text-xs font-medium bg-green-50 text-green-800 ring-1 ring-green-200 dark:bg-green-950 dark:text-green-200 dark:ring-green-800"
	case "failed":
		return "rounded px-1.5 py-0.5 text-xs font-medium bg-red-50 text-red-800 ring-1 ring-red-200 dark:bg-red-950 dark:text-red-200 dark:ring-red-800"
	}
	return "rounded px-1.5 py-0.5 text-xs font-medium bg-amber-50 text-amber-900 ring-1 ring-amber-200 dark:bg-amber-950 dark:text-amber-200 dark:ring-amber-800"
}

func settingsLinkClass(active bool) string {
	if active {
		return "block rounded-md bg-slate-200 px-3 py-1.5 text-sm font-medium text-slate-900 dark:bg-slate-800 dark:text-slate-100"
	}
	return "block rounded-md px-3 py-1.5 text-sm text-slate-600 hover:bg-slate-100 dark:text-slate-300 dark:hover:bg-slate-800"
}

func signupTitle(p SignupPage) string {
	if p.Invite != nil {
		return "Create your account"
	}
	return "Create a Clusterdeck account"
}

// sshKeysFor is the SSH keys page, coming back to the launch page after.
func sshKeysFor(launch string) string {
	if launch == "" {
		return "/settings/ssh-keys"
	}
	return "/settings/ssh-keys?next=" + url.QueryEscape(launch)
}

// forgotURL is the reset form, with the address typed so far.
func forgotURL(email string) string {
	if email == "" {
		return "/forgot-password"
	}
	return "/forgot-password?email=" + url.QueryEscape(email)
}

func signupURL(next string) string {
	if next == "" {
		return "/signup"
	}
	return "/signup?next=" + url.QueryEscape(next)
}

func loginURL(next string) string {
	if next == "" {
		return "/login"
	}
	return "/login?next=" + url.QueryEscape(next)
}
