package jobs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/nodespec"
	"github.com/clusterdeck/clusterdeck/models/readiness"
	"github.com/clusterdeck/clusterdeck/models/software"
)

// checkStale is how long a check handed to node-0 may stay unanswered
// before another one is planned.
const checkStale = 2 * time.Minute

// Install drives every installing cluster to ready or degraded (L5, L6,
// S1, S2). Each tick, per cluster and attempt, it plans node-0's install,
// then every worker's once node-0 succeeded (they need its join
// information), then the software's own check on node-0, again each tick
// until the check passes. It reads every check's raw output with
// models/readiness against the expected nodes: all pass → ready. An
// install that fails, or a deadline passed first → degraded, naming the
// node and quoting the tool. Agents take the tasks and post their output
// through the agent protocol; this job makes every decision.
type Install struct {
	Store *models.Store
	Mail  *models.ClusterNotify // E1 mails on ready/degraded, queued with the change; nil = none
}

// Name implements Job.
func (j *Install) Name() string { return "install" }

// Run implements Job. One cluster's trouble does not stop the others.
func (j *Install) Run(ctx context.Context) error {
	clusters, err := j.Store.ClustersInStatus(ctx, models.StatusInstalling)
	if err != nil {
		return err
	}
	var errs []error
	for _, c := range clusters {
		if c.Lifecycle().TerminateAsked() {
			continue
		}
		if err := j.advance(ctx, c); err != nil && !errors.Is(err, models.ErrConflict) {
			errs = append(errs, fmt.Errorf("cluster %s: %w", c.ID, err))
		}
	}
	return errors.Join(errs...)
}

// attempt is one install attempt as the job reads it.
type attempt struct {
	c        models.Cluster
	run      models.SoftwareRun
	nodes    []models.ClusterNode
	spec     nodespec.Cluster
	sw       *software.Software          // nil when the cluster's software is not registered
	installs map[int]models.SoftwareTask // by rank
	check    *models.SoftwareTask        // the latest check
	judged   *models.SoftwareTask        // the latest check with a verdict
}

// advance moves one installing cluster as far as it can go this tick.
func (j *Install) advance(ctx context.Context, c models.Cluster) error {
	a, err := j.load(ctx, c)
	if err != nil {
		return err
	}
	if a.sw == nil {
		return j.degrade(ctx, a, models.InstallFailed(models.InstallConfig), "", fmt.Sprintf("The cluster asks for software %q, which Clusterdeck cannot install.", c.Software))
	}
	if err := a.spec.Validate(); err != nil {
		return j.degrade(ctx, a, models.InstallFailed(models.InstallConfig), "", "The cluster's software configuration cannot be generated: "+err.Error())
	}
	if t, failed := a.failedInstall(); failed {
		return j.degrade(ctx, a, models.InstallFailed(t.Node()), t.Node(), installFailure(a, t))
	}
	if t := a.check; t != nil && t.Finished() && t.Summary == "" {
		rep, summary := a.judge(*t)
		if err := j.Store.RecordCheckVerdict(ctx, c, *t, summary); err != nil {
			return err
		}
		if rep.Ready && t.Status == models.TaskOK {
			return j.ready(ctx, a, summary)
		}
		t.Summary = summary
		a.judged = t
	}
	if j.Store.Now().After(a.run.Deadline) {
		return j.timeout(ctx, a)
	}
	return j.plan(ctx, a)
}

// load reads the cluster's current attempt.
func (j *Install) load(ctx context.Context, c models.Cluster) (*attempt, error) {
	run, err := j.Store.SoftwareRunFor(ctx, c)
	if err != nil {
		return nil, err
	}
	nodes, err := j.Store.NodesFor(ctx, c.ID)
	if err != nil {
		return nil, err
	}
	offer, err := j.Store.OfferByID(ctx, c.OfferID)
	if err != nil && !errors.Is(err, models.ErrNotFound) {
		return nil, err
	}
	tasks, err := j.Store.SoftwareTasks(ctx, c.ID, run.Attempt)
	if err != nil {
		return nil, err
	}
	a := &attempt{c: c, run: run, nodes: nodes, spec: models.ClusterSpec(c, nodes, offer),
		sw: software.Lookup(c.Software), installs: map[int]models.SoftwareTask{}}
	for i, t := range tasks {
		switch t.Kind {
		case models.TaskInstall:
			a.installs[t.Rank] = t
		case models.TaskCheck:
			a.check = &tasks[i] // ordered by seq: the last one wins
			if t.Summary != "" {
				a.judged = &tasks[i]
			}
		}
	}
	return a, nil
}

// failedInstall returns the lowest-ranked install that failed.
func (a *attempt) failedInstall() (models.SoftwareTask, bool) {
	for _, n := range a.nodes {
		if t, ok := a.installs[n.Rank]; ok && t.Status == models.TaskFailed {
			return t, true
		}
	}
	return models.SoftwareTask{}, false
}

// plan adds the attempt's next tasks, if any are due.
func (j *Install) plan(ctx context.Context, a *attempt) error {
	head, planned := a.installs[0]
	switch {
	case !planned:
		return j.add(ctx, a, installTask(a.spec, a.c, 0, ""))
	case head.Status != models.TaskOK:
		return nil // node-0 first: the workers need what it sets up
	case len(a.installs) < len(a.nodes):
		return j.add(ctx, a, a.workerInstalls()...)
	case !a.installed():
		return nil
	case a.check == nil:
		return j.add(ctx, a, checkTask(a.spec, a.sw, 1))
	case a.check.Summary != "" || a.checkStale(j.Store.Now()):
		return j.add(ctx, a, checkTask(a.spec, a.sw, a.check.Seq+1))
	}
	return nil
}

func (j *Install) add(ctx context.Context, a *attempt, tasks ...models.NewSoftwareTask) error {
	return j.Store.AddSoftwareTasks(ctx, a.c, a.run.Attempt, tasks)
}

// workerInstalls are the installs of every worker not planned yet.
// Kubernetes workers run the join command node-0 left.
func (a *attempt) workerInstalls() []models.NewSoftwareTask {
	join := a.run.JoinCommand
	if join == "" && len(a.nodes) > 0 {
		join = models.DerivedJoinCommand(a.c, a.nodes[0])
	}
	var out []models.NewSoftwareTask
	for _, n := range a.nodes {
		if _, ok := a.installs[n.Rank]; !ok {
			out = append(out, installTask(a.spec, a.c, n.Rank, join))
		}
	}
	return out
}

// installed reports whether every node's install succeeded.
func (a *attempt) installed() bool {
	for _, n := range a.nodes {
		if t, ok := a.installs[n.Rank]; !ok || t.Status != models.TaskOK {
			return false
		}
	}
	return true
}

// checkStale reports whether node-0 took the latest check and never answered.
func (a *attempt) checkStale(now time.Time) bool {
	t := a.check
	return t.Status == models.TaskSent && t.SentAt != nil && now.Sub(*t.SentAt) > checkStale
}

// judge reads a check's raw output (S2) and returns the report and its
// one-line verdict; output that does not parse is a failed check.
func (a *attempt) judge(t models.SoftwareTask) (readiness.Report, string) {
	rep, err := a.verdict(t.Output)
	if err != nil {
		return rep, fmt.Sprintf("check failed: %v: %s", err, brief(t.Output))
	}
	return rep, rep.Summary
}

// verdict parses check output against the cluster's nodes, the way the
// software reads its own check (models/software).
func (a *attempt) verdict(output string) (readiness.Report, error) {
	return a.sw.Judge(output, a.spec)
}

// ready is L5: the software passed its check on every node.
func (j *Install) ready(ctx context.Context, a *attempt, summary string) error {
	msg := fmt.Sprintf("%s passed its check on every node (%s). The cluster is ready.", a.sw.Label, summary)
	_, err := j.Store.MarkSoftwareReady(ctx, a.c.ID, a.run.Attempt, msg, j.Mail)
	return err
}

// timeout is L6 at the deadline: a node still installing, or a check that
// never passed.
func (j *Install) timeout(ctx context.Context, a *attempt) error {
	window := a.run.Deadline.Sub(a.run.StartedAt)
	for _, n := range a.nodes {
		t, planned := a.installs[n.Rank]
		if planned && t.Status == models.TaskOK {
			continue
		}
		why := "its agent never took the install"
		if planned && t.Status == models.TaskSent {
			why = "its install never reported back"
		} else if !planned {
			why = "node-0 never finished, so it could not start"
		}
		msg := fmt.Sprintf("%s did not install %s within %s (attempt %d): %s.", n.Name, a.c.Software, window, a.run.Attempt, why)
		return j.degrade(ctx, a, models.InstallFailed(n.Name), n.Name, msg)
	}
	node, msg := a.checkFailure(window)
	return j.degrade(ctx, a, models.CheckFailed(a.c.Software), node, msg)
}

// checkFailure names the node the last verdict failed and quotes the check.
func (a *attempt) checkFailure(window time.Duration) (string, string) {
	head := fmt.Sprintf("%s did not pass its check within %s (attempt %d)", a.sw.Label, window, a.run.Attempt)
	t := a.judged
	if t == nil {
		return "node-0", head + ": node-0 never answered a check."
	}
	node := "node-0"
	if rep, err := a.verdict(t.Output); err == nil {
		node = a.failingNode(rep)
	}
	return node, fmt.Sprintf("%s: %s. Output of `%s` on node-0:\n%s",
		head, t.Summary, checkShown(a.sw.CheckCommand), tailString(t.Output, 1200))
}

// failingNode is the node a report blames, "" for none.
func (a *attempt) failingNode(rep readiness.Report) string {
	return a.sw.Failing(rep, a.spec)
}

// installFailure is the degraded event's message for a failed install.
func installFailure(a *attempt, t models.SoftwareTask) string {
	return fmt.Sprintf("Installing %s failed on %s (%s, attempt %d). Output:\n%s",
		a.sw.Label, t.Node(), t.Role, t.Attempt, tailString(t.Output, 1500))
}

// degrade is L6: machines stay up and billing runs; the customer retries
// the install or terminates.
func (j *Install) degrade(ctx context.Context, a *attempt, lastError models.LastError, node, msg string) error {
	_, err := j.Store.DegradeSoftware(ctx, a.c.ID, a.run.Attempt, lastError, node, msg, j.Mail)
	return err
}

// tailString keeps the last n bytes of s (at a line start when one is near).
func tailString(s string, n int) string {
	s = strings.TrimRight(s, "\n")
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n:]
	if i := strings.IndexByte(s, '\n'); i >= 0 && i < 200 {
		s = s[i+1:]
	}
	for s != "" && !utf8.RuneStart(s[0]) {
		s = s[1:]
	}
	return "…\n" + s
}

// brief is the end of a short output on one line.
func brief(s string) string {
	return strings.ReplaceAll(tailString(strings.TrimSpace(s), 300), "\n", " / ")
}

// checkShown is a check command as quoted in an event: its first line, and
// "…" when it has more.
func checkShown(cmd string) string {
	first, rest, _ := strings.Cut(strings.TrimSpace(cmd), "\n")
	if strings.TrimSpace(rest) != "" {
		return first + " …"
	}
	return first
}
