package web

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/clusterdeck/clusterdeck/models"
)

// useCaseFixture is one organisation with an owner signed in (browser and
// API key), money, offers and room for clusters.
type useCaseFixture struct {
	app   *testApp
	owner account
	c     *client
	token string
	body  string // the last answer's body
	// auditOrg is the organisation whose log the case's entry goes to, when
	// not the owner's (an operator's change goes to the changed one's).
	auditOrg string
}

// useCase is one use case: act performs it through the real
// router and returns the status; done reports whether its change is in the
// database; audit is the entry it writes.
type useCase struct {
	name  string
	table string // the table whose write is made to fail (audit_log unless said)
	audit string
	setup func(t *testing.T, f *useCaseFixture) (act func() int, done func() bool)
}

// E2, A5 ("use cases own their transactions"):
// every use case's state change, event, audit entry and outbox mail commit
// together. With the audit log (or the outbox) unwritable each action fails
// and leaves nothing behind, not its change, nor its event, nor its mail;
// once writable again the same request succeeds and is audited.
func TestUseCasesCommitWithTheirAuditEntry(t *testing.T) {
	cases := []useCase{
		{name: "launch (API)", audit: "cluster.launch", setup: launchCase},
		{name: "terminate (page)", audit: "cluster.terminate", setup: terminateCase},
		{name: "stop (API)", audit: "cluster.stop", setup: stopCase},
		{name: "retry install (API)", audit: "cluster.retry_install", setup: retryInstallCase},
		{name: "kubeconfig download (API)", audit: "cluster.kubeconfig", setup: kubeconfigCase},
		{name: "recovery policy (API)", audit: "cluster.recovery_policy", setup: recoveryPolicyCase},
		{name: "recover now (page)", audit: "cluster.recover_now", setup: recoverNowCase},
		{name: "add worker (API)", audit: "cluster.add_worker", setup: addWorkerCase},
		{name: "replace node (API)", audit: "cluster.replace_node", setup: replaceNodeCase},
		{name: "resume (API)", audit: "cluster.resume", setup: resumeCase},
		{name: "invite", audit: "member.invite", setup: inviteCase},
		{name: "invite without its mail", table: "mail_outbox", audit: "member.invite", setup: inviteCase},
		{name: "revoke invite", audit: "member.invite_revoke", setup: revokeInviteCase},
		{name: "change role", audit: "member.role_change", setup: changeRoleCase},
		{name: "remove member", audit: "member.remove", setup: removeMemberCase},
		{name: "add SSH key", audit: "ssh_key.add", setup: addSSHKeyCase},
		{name: "delete SSH key", audit: "ssh_key.delete", setup: deleteSSHKeyCase},
		{name: "create API key", audit: "api_key.create", setup: createAPIKeyCase},
		{name: "revoke API key", audit: "api_key.revoke", setup: revokeAPIKeyCase},
		{name: "create environment", audit: "environment.create", setup: createEnvironmentCase},
		{name: "quote request", audit: "quote_request.create", setup: quoteRequestCase},
		{name: "quote request without its mails", table: "mail_outbox", audit: "quote_request.create", setup: quoteRequestCase},
		{name: "answer a quote request (operator)", audit: "quote_request.status", setup: quoteRequestStatusCase},
		{name: "change quota (operator)", audit: "org.quota_change", setup: quotaCase},
		{name: "log out everywhere", audit: "user.sessions_revoke", setup: revokeSessionsCase},
		{name: "change password", audit: "user.password_change", setup: changePasswordCase},
		{name: "create volume (page)", audit: "volume.create", setup: createVolumeCase},
		{name: "grow volume (API)", audit: "volume.grow", setup: growVolumeCase},
		{name: "delete volume (API)", audit: "volume.delete", setup: deleteVolumeCase},
	}
	eachApp(t, func(t *testing.T, app *testApp) {
		f := newUseCaseFixture(t, app)
		for _, uc := range cases {
			t.Run(uc.name, func(t *testing.T) { f.check(t, uc) })
		}
	})
}

func newUseCaseFixture(t *testing.T, app *testApp) *useCaseFixture {
	ctx := context.Background()
	owner := app.signupAccount("owner@example.com", "Atomic")
	if _, err := app.store.SetOrgQuota(ctx, owner.org.ID, 1000, 8000); err != nil {
		t.Fatal(err)
	}
	if _, err := app.store.SetOperator(ctx, owner.user.Email, true); err != nil {
		t.Fatal(err)
	}
	f := &useCaseFixture{app: app, owner: owner, token: apiKeyFor(t, app, owner)}
	f.c = app.login(owner)
	return f
}

func (f *useCaseFixture) check(t *testing.T, uc useCase) {
	table := uc.table
	if table == "" {
		table = "audit_log"
	}
	f.auditOrg = f.owner.org.ID
	act, done := uc.setup(t, f)
	if done() {
		t.Fatal("the change is there before the action")
	}
	audits := len(f.app.auditActions(f.auditOrg))
	rows := f.rowCounts(t)

	restore := f.breakTable(t, table)
	code := act()
	restore()
	if code < 500 {
		t.Errorf("with %s unwritable the action answered %d, want a failure", table, code)
	}
	if done() {
		t.Errorf("with %s unwritable the change committed anyway", table)
	}
	if got := f.rowCounts(t); got != rows {
		t.Errorf("with %s unwritable rows were left behind: %s, before %s", table, got, rows)
	}
	if n := len(f.app.auditActions(f.auditOrg)); n != audits {
		t.Errorf("with %s unwritable %d audit entries were written", table, n-audits)
	}

	if code := act(); code >= 400 {
		t.Fatalf("once writable the action answered %d: %s", code, f.body)
	}
	if !done() {
		t.Error("once writable the change is not there")
	}
	if got := f.app.auditActions(f.auditOrg); len(got) == 0 || got[0] != uc.audit {
		t.Errorf("newest audit entries %v, want %s first", got, uc.audit)
	}
}

// breakTable renames table away, so writes to it fail, until restore.
func (f *useCaseFixture) breakTable(t *testing.T, table string) (restore func()) {
	t.Helper()
	if err := f.app.db.Exec("ALTER TABLE " + table + " RENAME TO " + table + "_off").Error; err != nil {
		t.Fatal(err)
	}
	return func() {
		if err := f.app.db.Exec("ALTER TABLE " + table + "_off RENAME TO " + table).Error; err != nil {
			t.Fatal(err)
		}
	}
}

// rowCounts sums up the rows a use case may insert or delete.
func (f *useCaseFixture) rowCounts(t *testing.T) string {
	t.Helper()
	var parts []string
	for _, table := range []string{"clusters", "cluster_nodes", "cluster_events", "cluster_software", "quotes",
		"mail_outbox", "capacity_requests", "invites", "memberships", "ssh_keys", "api_keys", "environments"} {
		var n int64
		if err := f.app.db.Table(table).Count(&n).Error; err != nil {
			t.Fatal(err)
		}
		parts = append(parts, fmt.Sprintf("%s=%d", table, n))
	}
	return strings.Join(parts, " ")
}

func (f *useCaseFixture) post(path string, form url.Values) int {
	rec := f.c.post(path, form)
	f.body = rec.Body.String()
	return rec.Code
}

func (f *useCaseFixture) api(method, path, body string, headers ...string) int {
	code, out := apiJSON(f.app.t, f.app, method, path, f.token, body, headers...)
	f.body = fmt.Sprint(out)
	return code
}

// cluster launches a provisioning cluster named name, changed by update.
func (f *useCaseFixture) cluster(t *testing.T, name string, update map[string]any) models.Cluster {
	cl := launchFor(t, f.app, f.owner, name)
	if update != nil {
		if err := f.app.db.Model(&models.Cluster{}).Where("id = ?", cl.ID).Updates(update).Error; err != nil {
			t.Fatal(err)
		}
	}
	return cl
}

func (f *useCaseFixture) clusterNow(t *testing.T, id string) models.Cluster {
	cl, err := f.app.store.ClusterForOrg(context.Background(), f.owner.org.ID, id)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

func launchCase(t *testing.T, f *useCaseFixture) (func() int, func() bool) {
	f.app.seedOffers(testOffer("h100x8", "us-east", 8, 2_490_000, intp(20)))
	if _, err := f.app.store.Deposit(context.Background(), f.owner.org.ID, 500*models.Micro, "dep-launch", "test"); err != nil {
		t.Fatal(err)
	}
	q, err := f.app.store.CreateQuote(context.Background(), f.owner.org.ID, f.owner.env.ID,
		models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 2, GPUsPerNode: 8})
	if err != nil {
		t.Fatal(err)
	}
	act := func() int {
		return f.api(http.MethodPost, "/v1/gpu/clusters", `{"quoteId":"`+q.ID+`","name":"atomic-launch"}`, "Idempotency-Key", "atomic-1")
	}
	done := func() bool {
		var n int64
		f.app.db.Model(&models.Cluster{}).Where("name = ?", "atomic-launch").Count(&n)
		return n > 0
	}
	return act, done
}

func terminateCase(t *testing.T, f *useCaseFixture) (func() int, func() bool) {
	cl := f.cluster(t, "atomic-terminate", nil)
	return func() int { return f.post("/clusters/"+cl.ID+"/terminate", nil) },
		func() bool { return f.clusterNow(t, cl.ID).TerminateRequestedAt != nil }
}

func retryInstallCase(t *testing.T, f *useCaseFixture) (func() int, func() bool) {
	cl := f.cluster(t, "atomic-retry", map[string]any{"status": models.StatusDegraded, "software": "slurm",
		"last_error": "install_failed: node-1", "ready_at": f.app.clock.Now()})
	return func() int { return f.api(http.MethodPost, "/v1/gpu/clusters/"+cl.ID+"/retry-install", "") },
		func() bool { return f.clusterNow(t, cl.ID).Status == models.StatusInstalling }
}

func kubeconfigCase(t *testing.T, f *useCaseFixture) (func() int, func() bool) {
	const kubeconfig = "apiVersion: v1\nkind: Config\n"
	cl := f.cluster(t, "atomic-kube", map[string]any{"status": models.StatusReady, "software": "kubernetes"})
	if err := f.app.db.Create(&models.SoftwareRun{ClusterID: cl.ID, OrgID: cl.OrgID, Software: "kubernetes", Attempt: 1,
		Kubeconfig: kubeconfig, KubeconfigSource: "node"}).Error; err != nil {
		t.Fatal(err)
	}
	served := false
	act := func() int {
		rec := f.app.apiGet("/v1/gpu/clusters/"+cl.ID+"/kubeconfig", f.token)
		f.body, served = rec.Body.String(), strings.Contains(rec.Body.String(), kubeconfig)
		return rec.Code
	}
	return act, func() bool { return served }
}

func inviteCase(t *testing.T, f *useCaseFixture) (func() int, func() bool) {
	email := models.NewID("inv") + "@example.com"
	return func() int { return f.post("/settings/team/invites", url.Values{"email": {email}, "role": {"member"}}) },
		func() bool {
			var n int64
			f.app.db.Model(&models.Invite{}).Where("email = ?", email).Count(&n)
			return n > 0
		}
}

func revokeInviteCase(t *testing.T, f *useCaseFixture) (func() int, func() bool) {
	inv, _, err := f.app.store.CreateInvite(context.Background(), f.owner.org.ID, models.RoleOwner, f.owner.user.ID,
		"revoked@example.com", models.RoleMember)
	if err != nil {
		t.Fatal(err)
	}
	return func() int { return f.post("/settings/team/invites/"+inv.ID+"/revoke", nil) },
		func() bool {
			var now models.Invite
			f.app.db.Where("id = ?", inv.ID).Take(&now)
			return now.RevokedAt != nil
		}
}

func changeRoleCase(t *testing.T, f *useCaseFixture) (func() int, func() bool) {
	m := f.app.joinAccount(f.owner, "promoted@example.com", models.RoleMember)
	return func() int {
			return f.post("/settings/team/members/"+m.user.ID+"/role", url.Values{"role": {"admin"}})
		}, func() bool {
			now, err := f.app.store.Member(context.Background(), f.owner.org.ID, m.user.ID)
			return err == nil && now.Role == models.RoleAdmin
		}
}

func removeMemberCase(t *testing.T, f *useCaseFixture) (func() int, func() bool) {
	m := f.app.joinAccount(f.owner, "removed@example.com", models.RoleMember)
	return func() int { return f.post("/settings/team/members/"+m.user.ID+"/remove", nil) },
		func() bool {
			_, err := f.app.store.Member(context.Background(), f.owner.org.ID, m.user.ID)
			return err != nil
		}
}

func addSSHKeyCase(t *testing.T, f *useCaseFixture) (func() int, func() bool) {
	key := testSSHKey(t, "atomic")
	return func() int {
			return f.post("/settings/ssh-keys", url.Values{"name": {"atomic-add"}, "public_key": {key}})
		}, func() bool {
			var n int64
			f.app.db.Model(&models.SSHKey{}).Where("name = ?", "atomic-add").Count(&n)
			return n > 0
		}
}

func deleteSSHKeyCase(t *testing.T, f *useCaseFixture) (func() int, func() bool) {
	key, err := f.app.store.AddSSHKey(context.Background(), f.owner.org.ID, f.owner.user.ID, "atomic-delete", testSSHKey(t, "del"))
	if err != nil {
		t.Fatal(err)
	}
	return func() int { return f.post("/settings/ssh-keys/"+key.ID+"/delete", nil) },
		func() bool {
			var n int64
			f.app.db.Model(&models.SSHKey{}).Where("id = ?", key.ID).Count(&n)
			return n == 0
		}
}

func createAPIKeyCase(t *testing.T, f *useCaseFixture) (func() int, func() bool) {
	return func() int {
			return f.post("/settings/api-keys", url.Values{"name": {"atomic-key"}, "environment": {f.owner.env.ID}})
		}, func() bool {
			var n int64
			f.app.db.Model(&models.APIKey{}).Where("name = ?", "atomic-key").Count(&n)
			return n > 0
		}
}

func revokeAPIKeyCase(t *testing.T, f *useCaseFixture) (func() int, func() bool) {
	k, _, err := f.app.store.CreateAPIKey(context.Background(), f.owner.org.ID, f.owner.env.ID, f.owner.user.ID, "atomic-revoke")
	if err != nil {
		t.Fatal(err)
	}
	return func() int { return f.post("/settings/api-keys/"+k.ID+"/revoke", nil) },
		func() bool {
			now, err := f.app.store.APIKeyForOrg(context.Background(), f.owner.org.ID, k.ID)
			return err == nil && now.RevokedAt != nil
		}
}

func createEnvironmentCase(t *testing.T, f *useCaseFixture) (func() int, func() bool) {
	return func() int { return f.post("/settings/environments", url.Values{"name": {"atomic-env"}}) },
		func() bool {
			var n int64
			f.app.db.Model(&models.Environment{}).Where("name = ?", "atomic-env").Count(&n)
			return n > 0
		}
}

func quotaCase(t *testing.T, f *useCaseFixture) (func() int, func() bool) {
	other := f.app.signupAccount("quota@example.com", "Quota Org")
	f.auditOrg = other.org.ID
	return func() int {
			return f.post("/admin/orgs/"+other.org.ID+"/quota", url.Values{"max_machines": {"33"}, "max_gpus": {"99"}})
		}, func() bool {
			org, err := f.app.store.OrgByID(context.Background(), other.org.ID)
			return err == nil && org.MaxMachines == 33
		}
}

func (f *useCaseFixture) sessionVersion(t *testing.T) int {
	u, err := f.app.store.UserByID(context.Background(), f.owner.user.ID)
	if err != nil {
		t.Fatal(err)
	}
	return u.SessionVersion
}

func revokeSessionsCase(t *testing.T, f *useCaseFixture) (func() int, func() bool) {
	before := f.sessionVersion(t)
	return func() int { return f.post("/settings/sessions/revoke", nil) },
		func() bool { return f.sessionVersion(t) != before }
}

func changePasswordCase(t *testing.T, f *useCaseFixture) (func() int, func() bool) {
	const next = "a brand new passphrase"
	return func() int {
			return f.post("/settings/password", url.Values{"current_password": {testPassword},
				"new_password": {next}, "confirm_password": {next}})
		}, func() bool {
			_, err := f.app.store.Authenticate(context.Background(), f.owner.user.Email, next)
			return err == nil
		}
}

func quoteRequestCase(t *testing.T, f *useCaseFixture) (func() int, func() bool) {
	form := validQuoteForm()
	form.Set("notes", models.NewID("notes"))
	return func() int { return f.post("/quote-requests", form) },
		func() bool {
			var n int64
			f.app.db.Model(&models.QuoteRequest{}).Where("notes = ?", form.Get("notes")).Count(&n)
			return n > 0
		}
}

func quoteRequestStatusCase(t *testing.T, f *useCaseFixture) (func() int, func() bool) {
	form := validQuoteForm()
	r, err := f.app.store.As(models.Actor{OrgID: f.owner.org.ID, EnvID: f.owner.env.ID, UserID: f.owner.user.ID, Name: f.owner.user.Email}).
		RequestCapacity(context.Background(), models.QuoteRequestInput{Accelerator: form.Get("accelerator"), Nodes: 128, GPUsPerNode: 8,
			Fabric: "infiniband", Location: "us-east", StartDate: form.Get("start_date"), Duration: 6, DurationUnit: "weeks",
			Budget: "900", ContactName: "Ada", ContactEmail: "ada@example.com"}, models.CapacityNotify{BaseURL: "http://127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	return func() int {
			return f.post("/admin/quote-requests/"+r.ID+"/status", url.Values{"status": {"contacted"}})
		},
		func() bool {
			now, err := f.app.store.QuoteRequestByID(context.Background(), r.ID)
			return err == nil && now.Status == models.CapacityContacted
		}
}

// Volumes (V1–V3): each change commits with its audit entry.
func createVolumeCase(t *testing.T, f *useCaseFixture) (func() int, func() bool) {
	f.app.seedOffers(testOffer("h100x8", "us-east", 8, 2_490_000, intp(20)))
	return func() int {
			return f.post("/volumes", url.Values{"name": {"atomic-volume"}, "location": {"us-east"}, "size_gb": {"10"}})
		}, func() bool {
			var n int64
			f.app.db.Model(&models.Volume{}).Where("name = ?", "atomic-volume").Count(&n)
			return n > 0
		}
}

func (f *useCaseFixture) volume(t *testing.T, name string) models.Volume {
	f.app.seedOffers(testOffer("h100x8", "us-east", 8, 2_490_000, intp(20)))
	v, err := f.app.store.As(models.Actor{OrgID: f.owner.org.ID, EnvID: f.owner.env.ID, UserID: f.owner.user.ID, Role: models.RoleOwner,
		Name: f.owner.user.Email}).CreateVolume(context.Background(), models.VolumeInput{Name: name, Location: "us-east", SizeGB: 10})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func growVolumeCase(t *testing.T, f *useCaseFixture) (func() int, func() bool) {
	v := f.volume(t, "atomic-grow")
	return func() int { return f.api(http.MethodPost, "/v1/volumes/"+v.ID+"/grow", `{"sizeGb":20}`) },
		func() bool {
			var now models.Volume
			f.app.db.Where("id = ?", v.ID).Take(&now)
			return now.SizeGB == 20
		}
}

func deleteVolumeCase(t *testing.T, f *useCaseFixture) (func() int, func() bool) {
	v := f.volume(t, "atomic-delete")
	return func() int { return f.api(http.MethodDelete, "/v1/volumes/"+v.ID, "") },
		func() bool {
			var now models.Volume
			f.app.db.Where("id = ?", v.ID).Take(&now)
			return now.DeletedAt != nil
		}
}
