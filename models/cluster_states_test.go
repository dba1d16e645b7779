package models_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"gorm.io/gorm"
)

var notifyAll = &models.ClusterNotify{BaseURL: "https://deck.example"}

// fire drives one event through the exported function that owns it.
func fire(ctx context.Context, e *launchEnv, ev models.Event, id string) error {
	s := e.s
	switch ev {
	case models.EventPlaced:
		return s.MarkPlaced(ctx, id, []models.PlacedNode{{Rank: 0, ProviderNodeID: "p0"}, {Rank: 1, ProviderNodeID: "p1"}})
	case models.EventJoined, models.EventJoinedInstall, models.EventJoinedVerify:
		_, err := s.MarkJoined(ctx, id, notifyAll)
		return err
	case models.EventSoftwareReady, models.EventSoftwareVerify:
		_, err := s.MarkSoftwareReady(ctx, id, 1, "Slurm passed its check.", notifyAll)
		return err
	case models.EventVerified, models.EventVerifyFailed:
		c, err := s.ClusterByID(ctx, id)
		if err != nil {
			return err
		}
		run, err := s.VerifyRunFor(ctx, c)
		if err != nil {
			return err
		}
		what := ""
		if ev == models.EventVerifyFailed {
			what = "fabric"
		}
		_, err = s.FinishVerification(ctx, c, run, run.ReportOf(), what, "", "Verification ended.", nil, notifyAll)
		return err
	case models.EventKeepUnverified:
		_, err := s.As(models.Actor{OrgID: e.org.ID, Name: "owner@acme.example", Role: models.RoleOwner}).KeepUnverified(ctx, id)
		return err
	case models.EventDegrade:
		_, err := s.DegradeSoftware(ctx, id, 1, models.ParseLastError("install_failed:node-1"), "node-1", "node-1 failed to install.", notifyAll)
		return err
	case models.EventRetryInstall:
		_, err := s.RetryInstall(ctx, e.org.ID, id, "owner@acme.example")
		return err
	case models.EventFail:
		_, err := s.FailCluster(ctx, id, models.ParseLastError("timeout:agent"), "node-1", models.StepAgent, "node-1 was late.", notifyAll)
		return err
	case models.EventReleased:
		return s.MarkReleased(ctx, id)
	case models.EventTerminateRequested:
		_, err := s.RequestTerminate(ctx, e.org.ID, id, "owner@acme.example")
		return err
	case models.EventTerminated:
		_, err := s.MarkTerminated(ctx, id)
		return err
	}
	if err, ok := fireStop(ctx, e, ev, id); ok {
		return err
	}
	return fireHealth(ctx, e, ev, id)
}

// fireStop drives the stop and resume events (B6). The cluster handed to
// MarkResumed is made to ask for exactly ev.
func fireStop(ctx context.Context, e *launchEnv, ev models.Event, id string) (error, bool) {
	s := e.s
	switch ev {
	case models.EventStopRequested:
		_, err := s.RequestStop(ctx, e.org.ID, id, models.StopByBalance, "The balance ran out.")
		return err, true
	case models.EventStopped:
		_, err := s.MarkStopped(ctx, id)
		return err, true
	case models.EventMachinesStopped:
		_, err := s.MarkMachinesStopped(ctx, id)
		return err, true
	case models.EventResumeRequested:
		_, err := s.RequestResume(ctx, e.org.ID, id, "owner@acme.example")
		return err, true
	case models.EventResumed, models.EventResumedDegraded, models.EventResumedVerify:
		c, err := s.ClusterByID(ctx, id)
		if err != nil {
			return err, true
		}
		c.StoppedFrom = string(models.StatusReady)
		if ev == models.EventResumedDegraded {
			c.StoppedFrom = string(models.StatusInstalling)
		}
		if ev == models.EventResumedVerify { // stopped mid-verification (X13)
			c.StoppedFrom = string(models.StatusVerifying)
		}
		_, err = s.MarkResumed(ctx, c, notifyAll)
		return err, true
	case models.EventResumeFailed:
		_, err := s.FailResume(ctx, id, models.ParseLastError("timeout:agent"), "node-1", models.StepAgent, "node-1 was late.")
		return err, true
	}
	return nil, false
}

// fireHealth drives the health and recovery events (R2–R5). The cluster
// handed to each function is made to ask for exactly ev; the one
// compare-and-swap decides whether ev is legal in the stored status.
func fireHealth(ctx context.Context, e *launchEnv, ev models.Event, id string) error {
	s := e.s
	c, err := s.ClusterByID(ctx, id)
	if err != nil {
		return err
	}
	downs := []models.DownMachine{{Rank: 0, Name: "node-0", Seen: "stopped at the provider"}, {Rank: 1, Name: "node-1", Seen: "agent silent"}}
	switch ev {
	case models.EventMachineDown:
		if c.Status == models.StatusDegraded {
			c.Status = models.StatusReady
		}
		_, err = s.MarkMachinesDown(ctx, c, downs, notifyAll)
	case models.EventHealthNoted:
		c.Status = models.StatusDegraded
		_, err = s.MarkMachinesDown(ctx, c, downs, notifyAll)
	case models.EventHealthy, models.EventHealthyInstall:
		c.DegradedFrom = string(models.StatusReady)
		if ev == models.EventHealthyInstall {
			c.DegradedFrom = string(models.StatusInstalling)
		}
		_, err = s.MarkHealthy(ctx, c, notifyAll)
	case models.EventRecoveryAttempt:
		_, err = s.BeginRecoveryAttempt(ctx, c)
	case models.EventRecoveryExhausted:
		_, err = s.MarkRecoveryExhausted(ctx, c, notifyAll)
	default:
		return fireJoin(ctx, e, ev, c)
	}
	return err
}

// fireJoin drives the join events (L10, X5) on a cluster clusterIn
// prepared: node-1 down for a replace request, joining for its outcome.
func fireJoin(ctx context.Context, e *launchEnv, ev models.Event, c models.Cluster) error {
	actor := models.Actor{OrgID: e.org.ID, Name: "owner@acme.example", Role: models.RoleOwner}
	nodes, err := e.s.NodesFor(ctx, c.ID)
	if err != nil {
		return err
	}
	switch ev {
	case models.EventWorkerRequested:
		_, _, err = e.s.As(actor).AddWorker(ctx, c.ID)
	case models.EventReplaceRequested:
		if c.Status == models.StatusVerifying { // a swap before hand-over (X13)
			run, rerr := e.s.VerifyRunFor(ctx, c)
			if rerr != nil {
				return rerr
			}
			return e.s.SwapForVerification(ctx, c, run, 1, run.ReportOf(), nil)
		}
		_, _, err = e.s.As(actor).ReplaceNode(ctx, c.ID, 1)
	case models.EventNodeJoined:
		_, err = e.s.MarkNodeJoined(ctx, c, nodes[1], "node-1 joined.")
	case models.EventNodeJoinFailed:
		_, err = e.s.FailJoin(ctx, c, nodes[1], models.StepRunning, "It never booted.")
	default:
		return fmt.Errorf("no driver for event %s", ev)
	}
	return err
}

// snapshot is everything a transition may write.
type snapshot struct {
	cluster models.Cluster
	nodes   []models.ClusterNode
	events  int64
	mails   int64
}

func take(t *testing.T, e *launchEnv, id string) snapshot {
	t.Helper()
	ctx := context.Background()
	c, err := e.s.ClusterByID(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := e.s.NodesFor(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	sn := snapshot{cluster: c, nodes: nodes}
	e.db.Model(&models.ClusterEvent{}).Where("cluster_id = ?", id).Count(&sn.events)
	e.db.Model(&models.OutboxMail{}).Count(&sn.mails)
	return sn
}

// clusterIn launches a two-node cluster and puts it in status, as if it
// had got there: software none for EventJoined, slurm otherwise, install
// attempt 1 under way, a software failure on record.
func clusterIn(t *testing.T, e *launchEnv, status models.ClusterStatus, ev models.Event) string {
	t.Helper()
	ctx := context.Background()
	q := e.quote(t, models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 2, GPUsPerNode: 8})
	software := "slurm"
	if ev == models.EventJoined || ev == models.EventJoinedVerify {
		software = "none"
	}
	verify := ev == models.EventJoinedVerify || ev == models.EventSoftwareVerify // X13
	c, _, err := e.s.LaunchCluster(ctx, models.LaunchParams{OrgID: e.org.ID, EnvID: e.env.ID, QuoteID: q.ID,
		Actor: "owner@acme.example", Workload: models.Workload{Name: "train", Software: software}, Verify: verify})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.s.SoftwareRunFor(ctx, c); err != nil {
		t.Fatal(err)
	}
	set := map[string]any{"status": status, "last_error": "install_failed:node-0", "episode_started_at": t0, "degraded_from": "ready"}
	if ev == models.EventHealthyInstall {
		set["degraded_from"] = "installing"
	}
	if ev == models.EventKeepUnverified {
		set["last_error"] = "verification_failed:fabric"
	}
	switch ev { // what the stop and resume events find when they are due (B6)
	case models.EventStopped, models.EventMachinesStopped:
		set["stop_requested_at"] = t0
	case models.EventResumed, models.EventResumedDegraded, models.EventResumedVerify, models.EventResumeFailed:
		set["resume_requested_at"], set["resume_started_at"] = t0, t0
	}
	if status != models.StatusProvisioning && status != models.StatusFailed {
		set["ready_at"] = t0
	}
	err = e.db.Model(&models.Cluster{}).Where("id = ?", c.ID).Updates(set).Error
	if err != nil {
		t.Fatal(err)
	}
	node := map[string]any{}
	switch ev {
	case models.EventReplaceRequested:
		node["status"] = models.NodeDown
	case models.EventNodeJoined, models.EventNodeJoinFailed:
		node = map[string]any{"status": models.NodeJoining, "join_kind": models.JoinReplace, "join_seq": 1, "join_placed_at": t0}
	}
	if len(node) > 0 {
		if err := e.db.Model(&models.ClusterNode{}).Where("cluster_id = ? AND rank = 1", c.ID).Updates(node).Error; err != nil {
			t.Fatal(err)
		}
	}
	return c.ID
}

// L8: every (status, event) pair the table lists works and does what it
// says; every pair it does not list is refused with ErrConflict and writes
// nothing: no status, no event entry, no node row, no mail.
func TestClusterTransitionTable(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		first := newLaunchEnv(t, db, 100_000*models.Micro)
		// Every launched cluster holds its machines (A3): count enough.
		if err := db.Model(&models.Offer{}).Where("nodes_available IS NOT NULL").
			Update("nodes_available", 1000).Error; err != nil {
			t.Fatal(err)
		}
		for _, from := range models.ClusterStatuses {
			// An organisation for each starting status: a launch's admission
			// reads the organisation's live clusters, so one organisation
			// holding all ~250 made each launch slower than the one before.
			e := first
			if from != models.ClusterStatuses[0] {
				e = newLaunchEnvIn(t, db, first.s, 100_000*models.Micro)
				e.clock = first.clock
			}
			if err := db.Model(&models.Org{}).Where("id = ?", e.org.ID).
				Updates(map[string]any{"max_machines": 1000, "max_gpus": 8000}).Error; err != nil {
				t.Fatal(err)
			}
			addMember(t, e, "owner-"+string(from)+"@acme.example", models.RoleOwner)
			for _, ev := range models.Events {
				to, legal := models.NextStatus(from, ev)
				t.Run(string(from)+"/"+string(ev), func(t *testing.T) {
					id := clusterIn(t, e, from, ev)
					before := take(t, e, id)
					err := fire(ctx, e, ev, id)
					after := take(t, e, id)
					if legal {
						checkLegal(t, ev, to, err, before, after)
						return
					}
					idempotent := ev == models.EventTerminateRequested || ev == models.EventStopRequested
					if !errors.Is(err, models.ErrConflict) && !(idempotent && err == nil) {
						t.Errorf("illegal %s in %s: err %v, want ErrConflict", ev, from, err)
					}
					if !reflect.DeepEqual(before, after) {
						t.Errorf("illegal %s in %s wrote something:\nbefore %+v\nafter  %+v", ev, from, before, after)
					}
				})
			}
		}
	})
}

func checkLegal(t *testing.T, ev models.Event, to models.ClusterStatus, err error, before, after snapshot) {
	t.Helper()
	if err != nil {
		t.Fatalf("legal %s in %s refused: %v", ev, before.cluster.Status, err)
	}
	if after.cluster.Status != to {
		t.Errorf("%s: status %s, want %s", ev, after.cluster.Status, to)
	}
	if after.events != before.events+1 {
		t.Errorf("%s: %d event entries written, want 1", ev, after.events-before.events)
	}
	mails := map[models.ClusterStatus]bool{models.StatusReady: true, models.StatusFailed: true, models.StatusDegraded: true}
	// The customer's own "keep it as it is" (X13) mails nobody.
	if want := mails[to] && to != before.cluster.Status && ev != models.EventKeepUnverified || ev == models.EventRecoveryExhausted; (after.mails > before.mails) != want {
		t.Errorf("%s: %d mails queued, want a mail: %v", ev, after.mails-before.mails, want)
	}
	nodeStatus := map[models.Event]models.NodeStatus{models.EventJoined: models.NodeReady, models.EventJoinedInstall: models.NodeInstalling,
		models.EventSoftwareReady: models.NodeReady, models.EventFail: models.NodeFailed, models.EventTerminated: models.NodeTerminated,
		models.EventMachineDown: models.NodeDown, models.EventHealthNoted: models.NodeDown,
		models.EventStopped: models.NodeStopped, models.EventResumeFailed: models.NodeStopped,
		models.EventResumed: models.NodeReady, models.EventResumedDegraded: models.NodeReady, models.EventResumedVerify: models.NodeReady,
		models.EventJoinedVerify: models.NodeReady, models.EventSoftwareVerify: models.NodeReady,
		models.EventVerified: models.NodeReady, models.EventKeepUnverified: models.NodeReady}
	// The join events (L10, X5) change node-1 only, or add a joining node-2.
	joinNode := map[models.Event]models.NodeStatus{models.EventReplaceRequested: models.NodeJoining,
		models.EventNodeJoined: models.NodeReady, models.EventNodeJoinFailed: models.NodeDown}
	if ev == models.EventWorkerRequested && (len(after.nodes) != 3 || after.nodes[2].Status != models.NodeJoining) {
		t.Fatalf("%s: nodes %+v, want a joining node-2", ev, after.nodes)
	}
	for i, n := range after.nodes {
		if i >= len(before.nodes) {
			continue // the worker checked above
		}
		want, ok := nodeStatus[ev]
		if ev == models.EventFail && n.Name != "node-1" {
			want = models.NodeTerminated // released with the cluster; only the node that failed reads failed
		}
		if js, join := joinNode[ev]; join && n.Name == "node-1" {
			want, ok = js, true
		}
		if !ok {
			want = before.nodes[i].Status
		}
		if n.Status != want {
			t.Errorf("%s: %s is %s, want %s", ev, n.Name, n.Status, want)
		}
	}
}

// The table itself: every event leads to one status or keeps the status,
// terminal statuses lead nowhere, and every status but the terminal ones
// can be terminated (L7).
func TestClusterTransitionTableShape(t *testing.T) {
	for _, s := range models.ClusterStatuses {
		_, canTerminate := models.NextStatus(s, models.EventTerminated)
		if canTerminate == s.Terminal() {
			t.Errorf("%s: terminate legal = %v", s, canTerminate)
		}
		for _, ev := range models.Events {
			if _, ok := models.NextStatus(s, ev); ok && s.Terminal() && ev != models.EventReleased {
				t.Errorf("terminal %s has a way out: %s", s, ev)
			}
		}
	}
	for _, ev := range models.Events {
		targets := map[bool]map[models.ClusterStatus]bool{true: {}, false: {}}
		for _, tr := range models.ClusterTransitions {
			if tr.Event == ev {
				targets[tr.From == tr.To][tr.To] = true
			}
		}
		if moves := len(targets[false]); moves > 1 || (moves == 1 && len(targets[true]) > 0) || moves+len(targets[true]) == 0 {
			t.Errorf("%s: leads to %v and keeps %v", ev, targets[false], targets[true])
		}
	}
}

// docs/architecture.md's state diagram is the table's (L8).
func TestArchitectureStateDiagramMatchesTable(t *testing.T) {
	readme, err := os.ReadFile("../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- cluster states: generated from models.ClusterTransitions -->\n", "<!-- end cluster states -->"
	_, rest, ok := strings.Cut(string(readme), begin)
	got, _, ok2 := strings.Cut(rest, end)
	if !ok || !ok2 {
		t.Fatalf("docs/architecture.md has no state diagram between %q and %q", begin, end)
	}
	if want := models.StateDiagram(); got != want {
		t.Errorf("docs/architecture.md's state diagram differs from models.ClusterTransitions; put this between the markers:\n%s", want)
	}
}

func addMember(t *testing.T, e *launchEnv, email string, role models.Role) {
	t.Helper()
	u := models.User{ID: models.NewID("usr"), Email: email, CreatedAt: t0}
	if err := e.db.Create(&u).Error; err != nil {
		t.Fatal(err)
	}
	if err := e.db.Create(&models.Membership{OrgID: e.org.ID, UserID: u.ID, Role: role, CreatedAt: t0}).Error; err != nil {
		t.Fatal(err)
	}
}

// can is every "can X now" and "is anything under way" of one cluster.
type can struct{ terminate, retryInstall, recoverNow, setRecovery, resume, underWay bool }

func canOf(c models.Cluster) can {
	return can{c.CanTerminate(), c.CanRetryInstall(), c.CanRecoverNow(), c.CanSetRecovery(), c.CanResume(), c.UnderWay()}
}

// L6, L7, R3, R5, B6, L8: what may happen now is one method
// of the cluster per action, asserted for every status with nothing
// requested, a terminate, a stop and a resume under way; and each use case
// accepts its action exactly when the method says so, so the page's
// buttons and the guards cannot disagree.
func TestClusterCanNow(t *testing.T) {
	// clusterIn leaves a software failure on record and a recovery episode open.
	none := can{}
	base := map[models.ClusterStatus]can{
		models.StatusProvisioning: {terminate: true, setRecovery: true, underWay: true},
		models.StatusInstalling:   {terminate: true, setRecovery: true, underWay: true},
		models.StatusVerifying:    {terminate: true, setRecovery: true, underWay: true},
		models.StatusReady:        {terminate: true, setRecovery: true},
		models.StatusDegraded:     {terminate: true, retryInstall: true, recoverNow: true, setRecovery: true},
		models.StatusStopped:      {terminate: true, setRecovery: true, resume: true},
		models.StatusFailed:       none,
		models.StatusTerminated:   none,
	}
	live := func(s models.ClusterStatus, c can) can {
		if s.Terminal() {
			return none
		}
		return c
	}
	variants := []struct {
		name string
		set  map[string]any
		want func(models.ClusterStatus) can
	}{
		{"nothing requested", nil, func(s models.ClusterStatus) can { return base[s] }},
		{"terminating", map[string]any{"terminate_requested_at": t0}, func(s models.ClusterStatus) can {
			return live(s, can{underWay: true})
		}},
		{"stopping", map[string]any{"stop_requested_at": t0}, func(s models.ClusterStatus) can {
			c := base[s]
			c.resume = false // stopping (again): resume once the machines are stopped
			return live(s, can{c.terminate, c.retryInstall, c.recoverNow, c.setRecovery, c.resume, true})
		}},
		{"resuming", map[string]any{"resume_requested_at": t0, "resume_started_at": t0}, func(s models.ClusterStatus) can {
			c := base[s]
			if s == models.StatusStopped {
				c.resume, c.underWay = false, true
			}
			return c
		}},
	}
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		first := newLaunchEnv(t, db, 100_000*models.Micro)
		if err := db.Model(&models.Offer{}).Where("nodes_available IS NOT NULL").
			Update("nodes_available", 1000).Error; err != nil {
			t.Fatal(err)
		}
		// An organisation for each variant (the closures below read e and
		// actor): a launch's admission reads the organisation's live
		// clusters, so one organisation holding them all slowed each launch.
		var e *launchEnv
		var actor models.Actor
		useOrg := func(variant string) {
			e = first
			if variant != variants[0].name {
				e = newLaunchEnvIn(t, db, first.s, 100_000*models.Micro)
				e.clock = first.clock
			}
			if err := db.Model(&models.Org{}).Where("id = ?", e.org.ID).
				Updates(map[string]any{"max_machines": 1000, "max_gpus": 8000}).Error; err != nil {
				t.Fatal(err)
			}
			addMember(t, e, "owner-"+strings.ReplaceAll(variant, " ", "-")+"@acme.example", models.RoleOwner)
			actor = models.Actor{OrgID: e.org.ID, Name: "owner@acme.example", Role: models.RoleOwner}
		}
		in := func(t *testing.T, s models.ClusterStatus, set map[string]any) models.Cluster {
			t.Helper()
			id := clusterIn(t, e, s, "")
			if len(set) > 0 {
				if err := db.Model(&models.Cluster{}).Where("id = ?", id).Updates(set).Error; err != nil {
					t.Fatal(err)
				}
			}
			c, err := e.s.ClusterByID(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
		// accepted runs one use case on a fresh cluster and reports whether
		// it did what it is for.
		accepted := func(t *testing.T, s models.ClusterStatus, set map[string]any, action string) bool {
			c := in(t, s, set)
			var err error
			var after models.Cluster
			switch action {
			case "terminate":
				after, err = e.s.RequestTerminate(ctx, e.org.ID, c.ID, "owner@acme.example")
				return err == nil && c.TerminateRequestedAt == nil && after.TerminateRequestedAt != nil
			case "retryInstall":
				_, err = e.s.RetryInstall(ctx, e.org.ID, c.ID, "owner@acme.example")
			case "recoverNow":
				_, err = e.s.As(actor).RecoverNow(ctx, c.ID)
			case "setRecovery":
				_, err = e.s.As(actor).SetRecoveryPolicy(ctx, c.ID, models.RecoveryPolicy{Mode: models.RecoveryRestart, MaxAttempts: 2, CooldownMinutes: 5})
			case "resume":
				after, err = e.s.RequestResume(ctx, e.org.ID, c.ID, "owner@acme.example")
				return err == nil && c.ResumeRequestedAt == nil && after.ResumeRequestedAt != nil
			}
			if err != nil && !errors.Is(err, models.ErrConflict) {
				t.Fatalf("%s in %s: %v", action, s, err)
			}
			return err == nil
		}
		for _, v := range variants {
			useOrg(v.name)
			for _, s := range models.ClusterStatuses {
				t.Run(v.name+"/"+string(s), func(t *testing.T) {
					want := v.want(s)
					if got := canOf(in(t, s, v.set)); got != want {
						t.Fatalf("can %+v, want %+v", got, want)
					}
					for action, w := range map[string]bool{"terminate": want.terminate, "retryInstall": want.retryInstall,
						"recoverNow": want.recoverNow, "setRecovery": want.setRecovery, "resume": want.resume} {
						if got := accepted(t, s, v.set, action); got != w {
							t.Errorf("%s accepted = %v, but the cluster says %v", action, got, w)
						}
					}
				})
			}
		}
	})
}
