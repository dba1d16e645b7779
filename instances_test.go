package main

// Several instances and restarts (OP4): real `clusterdeck serve`
// processes on one database, driven through /dev/clock and
// /dev/jobs/{name}/run on either of them. The jobs also tick on their own
// schedules in both processes meanwhile, which is the point: each tick runs
// once across them.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
)

// devRun runs one job tick on s (it may be skipped when another tick holds
// the job's lease; callers loop until what they wait for happened).
func (s *server) devRun(t *testing.T, job string) {
	t.Helper()
	if code := s.api(t, http.MethodPost, "/dev/jobs/"+job+"/run", nil, nil); code != http.StatusOK {
		t.Logf("%s tick on %s: %d", job, s.url, code)
	}
}

// advance moves the shared fake clock on s.
func (s *server) advance(t *testing.T, minutes int) {
	t.Helper()
	if code := s.api(t, http.MethodPost, fmt.Sprintf("/dev/clock?minutes=%d", minutes), nil, nil); code != http.StatusOK {
		t.Fatalf("advance the clock: %d", code)
	}
}

func (s *server) clusterStatus(t *testing.T, id string) string {
	t.Helper()
	var c struct{ Status string }
	s.api(t, http.MethodGet, "/v1/gpu/clusters/"+id, nil, &c)
	return c.Status
}

// launch quotes and launches a 2-node RTX 4090 cluster (container
// machines: one-minute boots) through s.
func (s *server) launch(t *testing.T, name string) string {
	t.Helper()
	var quote struct{ ID string }
	if code := s.api(t, http.MethodPost, "/v1/gpu/clusters/quote",
		map[string]any{"accelerator": "RTX_4090", "nodes": 2, "gpusPerNode": 1}, &quote); code != http.StatusCreated {
		t.Fatalf("quote: %d", code)
	}
	var cl struct{ ID string }
	if code := s.api(t, http.MethodPost, "/v1/gpu/clusters", map[string]any{"quoteId": quote.ID, "name": name, "software": "none", "verify": false},
		&cl, "Idempotency-Key", name+"-"+quote.ID); code >= 300 || cl.ID == "" {
		t.Fatalf("launch: %d %+v", code, cl)
	}
	return cl.ID
}

// placeOn runs the provision job on s until cluster id is placed, before
// a test moves the clock: a provision tick of another instance's own
// schedule may hold the job's lease at that moment (s's run is then
// skipped), and a placement made after the clock moved would boot later
// than the time the test gives it.
func placeOn(t *testing.T, s *server, id string) {
	t.Helper()
	st := openStore(t, s)
	for deadline := time.Now().Add(60 * time.Second); ; {
		s.devRun(t, "provision")
		if c, err := st.ClusterByID(context.Background(), id); err == nil && c.PlacedAt != nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("cluster %s was never placed; events:\n%s", id, eventsOf(t, s, id))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// until runs ticks of jobs on the servers in turn (advancing the shared
// clock by step minutes each round) until cluster id reads want.
func until(t *testing.T, id, want string, step int, jobs []string, servers ...*server) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for i := 0; ; i++ {
		s := servers[i%len(servers)]
		got := s.clusterStatus(t, id)
		if got == want {
			return
		}
		if got == string(models.StatusFailed) || time.Now().After(deadline) {
			var logs strings.Builder
			for k, o := range servers { // every instance's warnings and errors: a stall may be the other's
				for _, l := range strings.Split(o.out.String(), "\n") {
					if !strings.Contains(l, "level=INFO") && strings.TrimSpace(l) != "" {
						fmt.Fprintf(&logs, "[%d] %s\n", k, l)
					}
				}
			}
			var sim struct {
				State string
			}
			if s.databaseURL != "" { // the simulated cloud's document: when each machine boots, its faults
				openStore(t, s).DB().Raw("SELECT state FROM sim_clouds").Scan(&sim)
			}
			var clock struct{ Now time.Time }
			openStore(t, s).DB().Raw("SELECT now FROM dev_clock WHERE id = 1").Scan(&clock)
			t.Fatalf("cluster %s is %s, want %s; events:\n%s\nlogs but INFO:\n%s\nclock %s, simulated cloud:\n%s", id, got, want, eventsOf(t, s, id), logs.String(), clock.Now, sim.State)
		}
		if step > 0 {
			s.advance(t, step)
		}
		for _, j := range jobs {
			s.devRun(t, j)
		}
		if step > 0 {
			// The agents run on wall time: a round that moved the clock
			// waits for one whole agent round, so heartbeats keep up with
			// the clock and no machine reads late.
			agentRound(t, s)
		} else {
			// Nothing moved the clock: poll the status again soon (the
			// cloud smoke tests' agents are OS processes of their own,
			// stepping every 200 ms, with no round to wait on).
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// agentRound waits until the simulated cloud's agents (SIM_AGENT_EVERY on
// the servers of one database) ran one whole round begun after the call.
// Each round starts by renewing the agent lease, which moves
// sim_clouds.agent_until on: the first renewal seen after the call begins
// a round whose heartbeats come after it, and the next one is seen only
// once that round ended.
func agentRound(t *testing.T, s *server) {
	t.Helper()
	agentRoundWithin(t, s, 30*time.Second)
}

// agentRoundWithin is agentRound with its own bound on the round (a bound
// for a stalled cloud, never a wait): the catalog walk's rounds step over a
// hundred machines, which on a loaded machine take longer than 30 s.
func agentRoundWithin(t *testing.T, s *server, within time.Duration) {
	t.Helper()
	st := s.store(t)
	lease := func() string {
		var until sql.NullString
		err := st.DB().Raw("SELECT agent_until FROM sim_clouds WHERE name = 'sim'").Row().Scan(&until)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			t.Fatalf("read the agent lease: %v", err)
		}
		return until.String
	}
	last, renewals := lease(), 0
	for deadline := time.Now().Add(within); renewals < 2; {
		if time.Now().After(deadline) {
			t.Fatalf("the simulated cloud's agents ran no round in %s (lease until %q):\n%s", within, last, s.out)
		}
		time.Sleep(10 * time.Millisecond) // polls the database: the round is another process's
		if now := lease(); now != last {
			last, renewals = now, renewals+1
		}
	}
}

// store is the server's database, opened once for the test.
func (s *server) store(t *testing.T) *models.Store {
	t.Helper()
	if s.st == nil {
		s.st = openStore(t, s)
	}
	return s.st
}

func eventsOf(t *testing.T, s *server, id string) string {
	t.Helper()
	evs, err := openStore(t, s).EventsFor(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range evs {
		fmt.Fprintf(&b, "%s|%s|%s|%s\n", e.Kind, e.Node, e.Step, e.Message)
	}
	// Where each node stands, and what its agent said last: a stalled step
	// (a mesh that never completes) is explained there, not in the events.
	st := openStore(t, s)
	nodes, err := st.NodesFor(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		fmt.Fprintf(&b, "%s: step %s, private address %q, message %q\n", n.Name, n.Step, n.PrivateIP, n.Message)
		lines, err := st.TailNodeLogs(context.Background(), n.OrgID, id, n.Rank, 5)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range lines {
			fmt.Fprintf(&b, "  %s\n", l.Text)
		}
	}
	return b.String()
}

// noLeaks runs the reconcile job on s and requires the leaks list empty.
func noLeaks(t *testing.T, s *server) {
	t.Helper()
	s.devRun(t, "reconcile")
	leaks, err := openStore(t, s).Leaks(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(leaks) != 0 {
		t.Errorf("reconcile found %d leaked machines: %+v", len(leaks), leaks)
	}
}

// OP4: two instances on one PostgreSQL behave as one. A cluster launched on
// one and placed by the other reaches ready (neither fails it for not
// knowing its machines); a machine that goes down is restarted once and
// the cluster recovers; a session made on one is valid on the other; a
// terminate on one is finished by the other and leaves no machine behind.
func TestTwoInstancesBehaveAsOne(t *testing.T) {
	t.Parallel() // two servers of its own on a schema of its own
	databaseURL := modelstest.PostgresSchemaURL(t)
	// No session keys configured: the development keys come from the
	// database, so both instances share them.
	a := startServer(t, databaseURL, "CLUSTERDECK_FAKE_CLOCK=1")
	b := startServer(t, databaseURL, "CLUSTERDECK_FAKE_CLOCK=1")

	id := a.launch(t, "twin")
	placeOn(t, b, id) // by the other instance
	b.advance(t, 2)
	until(t, id, "ready", 0, []string{"provision", "install"}, a, b)

	// A session made on one instance is valid on the other (one cookie jar:
	// cookies do not carry the port).
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	m := csrfInput.FindStringSubmatch(get(t, browser, a.url+"/login"))
	if m == nil {
		t.Fatal("no CSRF field on /login")
	}
	res, err := browser.PostForm(a.url+"/login", url.Values{"email": {a.email}, "password": {a.password}, "_csrf": {m[1]}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if page := get(t, browser, b.url+"/clusters"); !strings.Contains(page, `action="/logout"`) {
		t.Errorf("a session made on one instance is not signed in on the other:\n%.1000s", page)
	}

	// A machine goes down; with a restart policy the health passes and the
	// recovery of both instances bring it back with one restart.
	if code := b.api(t, http.MethodPut, "/v1/gpu/clusters/"+id+"/recovery",
		map[string]any{"mode": "restart", "maxAttempts": 3, "cooldownMinutes": 5}, nil); code != http.StatusOK {
		t.Fatalf("recovery policy: %d", code)
	}
	if code := a.api(t, http.MethodPost, "/dev/sim/faults", []map[string]any{{"kind": "goes_down", "group": id, "node": 1}}, nil); code != http.StatusOK {
		t.Fatalf("inject goes_down: %d", code)
	}
	until(t, id, "degraded", 1, []string{"health"}, a, b)
	until(t, id, "ready", 1, []string{"health", "recovery"}, b, a)
	evs := eventsOf(t, a, id)
	if n := strings.Count(evs, "Recovery attempt done: node-1 restarted"); n != 1 || strings.Count(evs, "Recovery attempt ") != 2 {
		t.Errorf("node-1 restarted %d times, want once in one attempt:\n%s", n, evs)
	}
	if n := strings.Count(evs, "Machine down after admission"); n != 1 {
		t.Errorf("machine down noted %d times, want once:\n%s", n, evs)
	}

	if code := a.api(t, http.MethodPost, "/v1/gpu/clusters/"+id+"/terminate", nil, nil); code >= 300 {
		t.Fatalf("terminate: %d", code)
	}
	until(t, id, "terminated", 0, []string{"terminate"}, b)
	noLeaks(t, a)
	a.stop(t)
	b.stop(t)
}

// OP4: the server killed (SIGKILL) while a cluster is provisioning and
// again while it recovers loses nothing: started again on the same database
// the cluster reaches ready, then recovers, and after terminate no machine
// is left at the simulated cloud.
func TestRestartMidProvisionAndMidRecovery(t *testing.T) {
	eachDatabase(t, func(t *testing.T, databaseURL string) {
		s := startServer(t, databaseURL, "CLUSTERDECK_FAKE_CLOCK=1")
		id := s.launch(t, "phoenix")
		s.devRun(t, "provision")
		s.advance(t, 2)
		s.kill(t) // mid-provision: placed, booting
		s.serve(t)
		until(t, id, "ready", 0, []string{"provision", "install"}, s)

		if code := s.api(t, http.MethodPut, "/v1/gpu/clusters/"+id+"/recovery",
			map[string]any{"mode": "restart", "maxAttempts": 3, "cooldownMinutes": 5}, nil); code != http.StatusOK {
			t.Fatalf("recovery policy: %d", code)
		}
		if code := s.api(t, http.MethodPost, "/dev/sim/faults", []map[string]any{{"kind": "goes_down", "group": id, "node": 0}}, nil); code != http.StatusOK {
			t.Fatalf("inject goes_down: %d", code)
		}
		until(t, id, "degraded", 1, []string{"health"}, s)
		s.devRun(t, "recovery") // the restart is asked for…
		s.kill(t)               // …and the server dies before it saw the machine back
		s.serve(t)
		until(t, id, "ready", 1, []string{"health", "recovery"}, s)

		if code := s.api(t, http.MethodPost, "/v1/gpu/clusters/"+id+"/terminate", nil, nil); code >= 300 {
			t.Fatalf("terminate: %d", code)
		}
		until(t, id, "terminated", 0, []string{"terminate"}, s)
		noLeaks(t, s)
		s.stop(t)
	})
}

// kill ends the server at once (SIGKILL): nothing gets to finish.
func (s *server) kill(t *testing.T) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-s.done
}

// OP4: SIGTERM lets the request in flight and the job tick it runs
// finish before the process exits. A reconcile tick held three seconds by
// a slow describe call is under way when the signal comes: the request
// still gets its answer, the tick's run is recorded as finished after the
// signal (it took longer than the second before it: runs are recorded on
// the fake clock, which stands still here, with their wall duration), and
// the process exits cleanly.
func TestGracefulShutdownFinishesInFlight(t *testing.T) {
	eachDatabase(t, func(t *testing.T, databaseURL string) {
		s := startServer(t, databaseURL, "CLUSTERDECK_FAKE_CLOCK=1")
		id := s.launch(t, "brief")
		s.devRun(t, "provision")
		if code := s.api(t, http.MethodPost, "/v1/gpu/clusters/"+id+"/terminate", nil, nil); code >= 300 {
			t.Fatalf("terminate: %d", code)
		}
		until(t, id, "terminated", 0, []string{"terminate"}, s)
		if code := s.api(t, http.MethodPost, "/dev/sim/faults", []map[string]any{{"kind": "describe_delay", "delay": "3s"}}, nil); code != http.StatusOK {
			t.Fatalf("inject describe_delay: %d", code)
		}
		answered := make(chan int, 1)
		go func() {
			req, _ := http.NewRequest(http.MethodPost, s.url+"/dev/jobs/reconcile/run", nil)
			req.Header.Set("Authorization", "Bearer "+s.apiKey)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				answered <- -1
				return
			}
			res.Body.Close()
			answered <- res.StatusCode
		}()
		sent := time.Now()
		time.Sleep(time.Second) // the tick is waiting on the provider
		beforeSignal := time.Since(sent)
		s.stop(t) // SIGTERM, then a clean exit within 30 s
		if code := <-answered; code != http.StatusOK {
			t.Fatalf("the request in flight at SIGTERM got %d, want 200", code)
		}
		runs, err := openStore(t, s).JobRuns(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var finished bool
		for _, r := range runs {
			finished = finished || r.Name == "reconcile" && r.FinishedAt.Sub(r.StartedAt) > beforeSignal && r.Error == ""
		}
		if !finished {
			t.Errorf("no reconcile run finished after SIGTERM: %+v\n%s", runs, s.out)
		}
	})
}
