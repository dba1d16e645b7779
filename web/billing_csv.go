package web

import (
	"encoding/csv"
	"net/http"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/labstack/echo/v4"
)

// usageCSV is GET /billing/usage.csv?month=: one row per machine, the
// cluster first, then the cells of the page's machine rows (B3).
func (h *handler) usageCSV(c echo.Context) error {
	w, err := h.monthParam(c)
	if err != nil {
		return err
	}
	st, err := h.statementOf(c, w)
	if err != nil {
		return err
	}
	rows := [][]string{{"cluster", "node", "machine_price", "hours", "amount", "status", "state_intervals"}}
	for _, l := range st.lines {
		for _, r := range machineRows(l) {
			rows = append(rows, append([]string{l.Cluster.Name}, r.Cells()...))
		}
	}
	for _, v := range st.volumes { // V3, X11: a volume's own row, its price per hour in machine_price
		rows = append(rows, []string{"Volume — " + v.Volume.Name, "", models.USD(v.Volume.HourRate()) + "/h", hours(v.Minutes),
			models.USD(v.Total()), titleCase(usageStatus(v.Accumulating)), ""})
	}
	return writeCSV(c, "usage-"+w.Month()+".csv", rows)
}

// transactionsCSV is GET /billing/transactions.csv?month=: the page's
// transactions, row for row.
func (h *handler) transactionsCSV(c echo.Context) error {
	w, err := h.monthParam(c)
	if err != nil {
		return err
	}
	st, err := h.statementOf(c, w)
	if err != nil {
		return err
	}
	tx, err := h.transactions(c, st)
	if err != nil {
		return err
	}
	rows := [][]string{{"date", "description", "status", "amount"}}
	for _, r := range ledgerRows(tx.rows) {
		rows = append(rows, []string{r.At, r.Description, r.Status, r.Amount})
	}
	rows = append(rows, []string{w.From.Format("2006-01-02 15:04"), "Balance carried in", "", models.USD(tx.carried)})
	return writeCSV(c, "transactions-"+w.Month()+".csv", rows)
}

func writeCSV(c echo.Context, name string, rows [][]string) error {
	res := c.Response()
	res.Header().Set(echo.HeaderContentType, "text/csv; charset=utf-8")
	res.Header().Set("Content-Disposition", `attachment; filename="`+name+`"`)
	res.WriteHeader(http.StatusOK)
	w := csv.NewWriter(res)
	if err := w.WriteAll(rows); err != nil {
		return err
	}
	return nil
}
