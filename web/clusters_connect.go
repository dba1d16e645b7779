package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/clusterdeck/clusterdeck/api"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/nodespec"
	"github.com/clusterdeck/clusterdeck/models/software"
	"github.com/clusterdeck/clusterdeck/views"
	"github.com/labstack/echo/v4"
)

// spec loads what nodespec needs for the cluster.
func (h *handler) spec(c echo.Context, cl models.Cluster, nodes []models.ClusterNode) nodespec.Cluster {
	o, _ := h.Store.OfferByID(c.Request().Context(), cl.OfferID) // a vanished offer only loses CPU/memory lines
	return models.ClusterSpec(cl, nodes, o)
}

// decorateClusterPage adds what the cluster page shows once machines are up:
// how to connect, the logs, and the software actions.
func (h *handler) decorateClusterPage(c echo.Context, cl models.Cluster, nodes []models.ClusterNode, cp *views.ClusterPage) error {
	cp.CanRetry = cl.CanRetryInstall()
	if sw := software.Lookup(cl.Software); sw != nil && sw.HeadReports && !cl.Ending() {
		reported, err := h.Store.KubeconfigReported(c.Request().Context(), cl.ID)
		if err != nil {
			return err
		}
		cp.C.Kubeconfig, cp.C.KubeconfigPending = reported, !reported
	}
	if cl.PlacedAt != nil {
		for _, n := range nodes {
			cp.LogRanks = append(cp.LogRanks, n.Rank)
		}
	}
	if cp.Tab == views.TabLogs && len(cp.LogRanks) > 0 {
		rank, err := logNode(c, cl)
		if err != nil {
			return echo.NewHTTPError(http.StatusUnprocessableEntity, fmt.Sprintf("No such node: this cluster has node-0 to node-%d.", cl.Nodes-1))
		}
		cp.LogRank = rank
		if !cp.Live {
			lines, err := h.Store.TailNodeLogs(c.Request().Context(), cl.OrgID, cl.ID, rank, logsBacklog)
			if err != nil {
				return err
			}
			for _, l := range lines {
				cp.LogLines = append(cp.LogLines, views.LogLineView{At: l.At.Format("15:04:05"), Text: l.Text})
			}
		}
	}
	starts, err := h.Store.NodeStarts(c.Request().Context(), cl.OrgID, cl.ID)
	if err != nil {
		return err
	}
	byRank := startsByRank(starts)
	nodeOf := map[int]models.ClusterNode{}
	for _, n := range nodes {
		nodeOf[n.Rank] = n
	}
	for i := range cp.Nodes {
		cp.Nodes[i].Start = startView(cl, nodeOf[cp.Nodes[i].Rank], byRank[cp.Nodes[i].Rank])
	}
	if !cl.Connectable() {
		return nil
	}
	s := h.spec(c, cl, nodes)
	cp.HeaderSSH = s.PrimarySSH().Command
	if cp.Tab != views.TabConnect {
		return nil
	}
	cv := &views.ConnectView{
		PrimarySSH: s.PrimarySSH().Command, EnvBlock: s.EnvBlock(0), EnvMasked: maskedEnvBlock(s, cl.Env()), Env: envViews(s, cl.Env()),
		Readiness: nodespec.ReadinessNote, Malloc: nodespec.MallocHint,
		StartCmd: cl.StartCommand, Ports: portViews(portsFor(cl, s)),
	}
	if s.HasSharedFolder() {
		cv.Hostfile = s.Hostfile()
	}
	for _, ssh := range s.SSH() {
		cv.Nodes = append(cv.Nodes, views.ConnectNode{Name: ssh.Name, Address: ssh.PrivateIP, SSH: ssh.Command})
	}
	for i, cmd := range s.Commands().All() {
		cv.Commands = append(cv.Commands, views.CommandView{ID: strconv.Itoa(i), Title: cmd.Name, RunOn: cmd.RunOn, Text: cmd.Text, Note: cmd.Note})
	}
	cv.Commands = append(cv.Commands, views.CommandView{ID: "readiness", Title: "Application readiness check (example)",
		RunOn: "every node, in your start command", Text: nodespec.ReadinessScript})
	cp.Connect = cv
	return nil
}

// apiConnections is GET /v1/gpu/clusters/{id}/connections (N2–N5, L9).
func (h *handler) apiConnections(c echo.Context) error {
	ctx := c.Request().Context()
	cl, err := h.Store.ClusterForOrg(ctx, principal(c).Org.ID, c.Param("id"))
	if err != nil {
		return err
	}
	if !cl.Connectable() {
		return &APIError{Status: http.StatusConflict, Code: "not_connectable",
			Message: "Connections exist once every machine is up (status " + string(cl.Status) + ")."}
	}
	nodes, err := h.Store.NodesFor(ctx, cl.ID)
	if err != nil {
		return err
	}
	s := h.spec(c, cl, nodes)
	env := map[string]string{}
	for _, e := range s.Env(0) {
		env[e.Name] = e.Value
	}
	out := api.Connections{
		Cluster: cl.ID, Status: string(cl.Status), Gateway: nilIfEmpty(cl.Gateway),
		Env: env, EnvBlock: s.EnvBlock(0), EnvNote: "Identical on every node but NODE_RANK (N3).",
		MallocHint: nodespec.MallocHint, Readiness: nodespec.ReadinessNote, ReadinessScript: nodespec.ReadinessScript,
		SSHConfig: s.SSHConfig(), Ports: portsFor(cl, s),
	}
	if s.HasSharedFolder() {
		out.Hostfile, out.HostfilePath = s.Hostfile(), s.HostfilePath()
	}
	for _, ssh := range s.SSH() {
		out.Nodes = append(out.Nodes, api.ConnectionNode{Name: ssh.Name, Rank: ssh.Rank, Address: ssh.PrivateIP, SSH: ssh.Command,
			PublicHost: nodes[ssh.Rank].PublicHost})
	}
	out.Primary = &out.Nodes[0]
	for _, cmd := range s.Commands().All() {
		out.Commands = append(out.Commands, api.Command{Name: cmd.Name, RunOn: cmd.RunOn, Command: cmd.Text, Note: cmd.Note})
	}
	return c.JSON(http.StatusOK, out)
}

func nilIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// requestRetryInstall records a retry of a failed install (L6) and wakes
// the install job.
func (h *handler) requestRetryInstall(c echo.Context) (models.Cluster, error) {
	cl, err := h.act(c).RetryInstall(c.Request().Context(), c.Param("id"))
	if err != nil {
		return cl, err
	}
	h.kick(c, "install")
	return cl, nil
}

// retryInstall is POST /clusters/{id}/retry-install (L6).
func (h *handler) retryInstall(c echo.Context) error {
	cl, err := h.requestRetryInstall(c)
	if err != nil {
		return err
	}
	return redirect(c, "/clusters/"+cl.ID)
}

// apiRetryInstall is POST /v1/gpu/clusters/{id}/retry-install (L6).
func (h *handler) apiRetryInstall(c echo.Context) error {
	cl, err := h.requestRetryInstall(c)
	if err != nil {
		return err
	}
	return h.clusterJSONResponse(c, http.StatusAccepted, cl)
}

// downloadKubeconfig is GET …/kubeconfig: the kubeconfig node-0 of the
// Kubernetes cluster reported, for its own organisation only, audited (S1);
// 409 kubeconfig_not_ready until node-0 reported it.
func (h *handler) downloadKubeconfig(c echo.Context) error {
	kc, err := h.act(c).Kubeconfig(c.Request().Context(), c.Param("id"))
	if errors.Is(err, models.ErrKubeconfigNotReady) {
		return &APIError{Status: http.StatusConflict, Code: "kubeconfig_not_ready",
			Message: "The kubeconfig is not available yet: node-0 reports it once Kubernetes is up on it."}
	}
	if err != nil {
		return err
	}
	c.Response().Header().Set("Content-Disposition", `attachment; filename="kubeconfig-`+c.Param("id")+`.yaml"`)
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.Blob(http.StatusOK, "application/yaml", []byte(kc))
}

// logNode reads ?node=N (rank 0 by default, N6) and checks it belongs to the cluster.
func logNode(c echo.Context, cl models.Cluster) (int, error) {
	q := c.QueryParam("node")
	if q == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(q)
	if err != nil || n < 0 || n >= cl.Nodes {
		return 0, invalid(models.FieldErrors{"node": fmt.Sprintf("a rank from 0 to %d", cl.Nodes-1)})
	}
	return n, nil
}

// logsBacklog is how many stored lines a stream starts with.
const logsBacklog = 500

// apiLogs is GET /v1/gpu/clusters/{id}/logs?node=N&follow=true|false (N6):
// the stored lines as JSON with follow=false, otherwise a server-sent event
// stream that follows the tail.
func (h *handler) apiLogs(c echo.Context) error {
	ctx := c.Request().Context()
	cl, err := h.Store.ClusterForOrg(ctx, principal(c).Org.ID, c.Param("id"))
	if err != nil {
		return err
	}
	rank, err := logNode(c, cl)
	if err != nil {
		return err
	}
	if c.QueryParam("follow") == "false" {
		lines, err := h.Store.TailNodeLogs(ctx, cl.OrgID, cl.ID, rank, models.MaxLogLinesPerNode)
		if err != nil {
			return err
		}
		out := make([]api.LogLine, 0, len(lines))
		for _, l := range lines {
			out = append(out, api.LogLine{ID: l.ID, Node: "node-" + strconv.Itoa(rank), At: l.At, Text: l.Text})
		}
		return c.JSON(http.StatusOK, api.LogLines{Cluster: cl.ID, Node: "node-" + strconv.Itoa(rank), Lines: out})
	}
	release, err := h.streams.acquire(c, principal(c)) // X19: counted with the event streams
	if err != nil {
		return err
	}
	defer release()
	return h.streamLogs(c, cl, rank, "the cluster has ended", func(l models.NodeLogLine) ([]byte, error) {
		return json.Marshal(api.LogLine{ID: l.ID, Node: "node-" + strconv.Itoa(rank), At: l.At, Text: l.Text})
	})
}

// streamLogsPage is GET /clusters/{id}/logs/stream?node=N: the page's live
// log, as server-sent HTML fragments for htmx's SSE extension.
func (h *handler) streamLogsPage(c echo.Context) error {
	ctx := c.Request().Context()
	cl, err := h.Store.ClusterForOrg(ctx, principal(c).Org.ID, c.Param("id"))
	if err != nil {
		return err
	}
	rank, err := logNode(c, cl)
	if err != nil {
		return err
	}
	var end bytes.Buffer
	if err := views.LogEnd().Render(ctx, &end); err != nil {
		return err
	}
	return h.streamLogs(c, cl, rank, end.String(), func(l models.NodeLogLine) ([]byte, error) {
		var buf bytes.Buffer
		err := views.LogLine(l.At.Format("15:04:05"), l.Text).Render(ctx, &buf)
		return buf.Bytes(), err
	})
}

// maxLogDownload bounds a log download: the newest lines that fit are
// sent (a node keeps at most models.MaxLogLinesPerNode lines anyway).
const maxLogDownload = 1 << 20

// downloadLog is GET /clusters/{id}/logs/download?node=N: the node's kept
// log as a text file, through the caller's organisation, newest lines
// first to go into the size bound, oldest first in the file.
func (h *handler) downloadLog(c echo.Context) error {
	ctx := c.Request().Context()
	cl, err := h.Store.ClusterForOrg(ctx, principal(c).Org.ID, c.Param("id"))
	if err != nil {
		return err
	}
	rank, err := logNode(c, cl)
	if err != nil {
		return err
	}
	lines, err := h.Store.TailNodeLogs(ctx, cl.OrgID, cl.ID, rank, models.MaxLogLinesPerNode)
	if err != nil {
		return err
	}
	node := "node-" + strconv.Itoa(rank)
	body := logFile(cl, node, lines, maxLogDownload)
	c.Response().Header().Set("Content-Disposition", `attachment; filename="`+fileSafe(cl.Name)+"-"+node+`.log"`)
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.Blob(http.StatusOK, "text/plain; charset=utf-8", body)
}

// logFile is a node's log as text, at most max bytes: a heading, then the
// lines (UTC times) oldest first; when the newest lines alone fill it, the
// heading says how many older ones were left out.
func logFile(cl models.Cluster, node string, lines []models.NodeLogLine, max int) []byte {
	out := make([][]byte, 0, len(lines))
	size, from := 0, len(lines)
	for from > 0 {
		l := lines[from-1]
		b := []byte(l.At.UTC().Format("2006-01-02 15:04:05") + "  " + strings.ReplaceAll(l.Text, "\n", " ") + "\n")
		if size+len(b) > max-512 { // room for the heading
			break
		}
		out, size, from = append(out, b), size+len(b), from-1
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "# %s of cluster %s, %d lines kept, times in UTC\n", node, cl.Name, len(lines))
	if from > 0 {
		fmt.Fprintf(&buf, "# the %d oldest lines are left out: the file holds the newest %d KiB\n", from, max>>10)
	}
	for i := len(out) - 1; i >= 0; i-- {
		buf.Write(out[i])
	}
	return buf.Bytes()
}

// fileSafe is a name for a downloaded file: letters, digits, '-', '_' and '.'.
func fileSafe(name string) string {
	b := []byte(name)
	for i, r := range b {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			b[i] = '-'
		}
	}
	if len(b) == 0 {
		return "cluster"
	}
	return string(b)
}

// logPanel is GET /clusters/{id}/logs/panel?node=N: the stream for another node.
func (h *handler) logPanel(c echo.Context) error {
	cl, err := h.Store.ClusterForOrg(c.Request().Context(), principal(c).Org.ID, c.Param("id"))
	if err != nil {
		return err
	}
	rank, err := logNode(c, cl)
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.LogStream(cl.ID, rank))
}

// streamLogs writes a node's last lines, then follows new ones as "line"
// events until the client leaves or the cluster ended and everything was
// sent, which it says with one "end" event carrying end.
func (h *handler) streamLogs(c echo.Context, cl models.Cluster, rank int, end string, encode func(models.NodeLogLine) ([]byte, error)) error {
	ctx := c.Request().Context()
	w := c.Response()
	w.Header().Set(echo.HeaderContentType, "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	holdOpen(c, streamWriteWindow) // a stream outlives the server's timeouts
	untimed(c)
	w.WriteHeader(http.StatusOK)
	lines, err := h.Store.TailNodeLogs(ctx, cl.OrgID, cl.ID, rank, logsBacklog)
	if err != nil {
		return nil // the status is sent; the client reconnects
	}
	var last int64
	poll := h.logPoll()
	heartbeat := time.NewTicker(15 * time.Second)
	defer heartbeat.Stop()
	for {
		for _, l := range lines {
			data, err := encode(l)
			if err != nil {
				return nil
			}
			if _, err := fmt.Fprintf(w, "id: %d\nevent: line\ndata: %s\n\n", l.ID, bytes.ReplaceAll(data, []byte("\n"), []byte("\ndata: "))); err != nil {
				return nil
			}
			last = l.ID
		}
		w.Flush()
		if len(lines) == 0 {
			cur, err := h.Store.ClusterByID(ctx, cl.ID)
			if err != nil || cur.Status.Terminal() {
				fmt.Fprintf(w, "event: end\ndata: %s\n\n", strings.ReplaceAll(end, "\n", "\ndata: "))
				w.Flush()
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-heartbeat.C:
			fmt.Fprint(w, ": keep-alive\n\n")
			w.Flush()
		case <-time.After(poll):
		}
		if lines, err = h.Store.NodeLogs(ctx, cl.OrgID, cl.ID, rank, last, 200); err != nil {
			return nil
		}
		holdOpen(c, streamWriteWindow) // each round's writes get their own window
	}
}
