package web

import (
	"encoding/csv"
	"net/http"
	"strconv"
	"strings"

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
	// hours has six decimals and minutes is exact, so price_per_hour ×
	// hours (or × minutes / 60) gives the amount to the cent (B3).
	rows := [][]string{{"cluster", "node", "price_per_hour", "hours", "minutes", "amount", "currency", "status", "state_intervals"}}
	for _, l := range st.lines {
		for _, r := range machineRows(l) {
			rows = append(rows, []string{l.Cluster.Name, r.Node, csvNumber(r.MachineHour), preciseHours(r.Minutes), strconv.FormatInt(r.Minutes, 10),
				csvNumber(r.Amount), csvCurrency, r.Status, r.Intervals})
		}
	}
	for _, v := range st.volumes { // V3, X11: a volume's own row, its price per hour in price_per_hour
		rows = append(rows, []string{"Volume — " + v.Volume.Name, "", csvNumber(models.USD(v.Volume.HourRate())), preciseHours(v.Minutes), strconv.FormatInt(v.Minutes, 10),
			csvNumber(models.USD(v.Total())), csvCurrency, titleCase(usageStatus(v.Accumulating)), ""})
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
	rows := [][]string{{"date", "description", "status", "amount", "currency"}}
	for _, r := range ledgerRows(tx.rows) {
		rows = append(rows, []string{r.At, r.Description, r.Status, csvNumber(r.Amount), csvCurrency})
	}
	rows = append(rows, []string{w.From.Format("2006-01-02 15:04"), "Balance carried in", "", csvNumber(models.USD(tx.carried)), csvCurrency})
	return writeCSV(c, "transactions-"+w.Month()+".csv", rows)
}

// CSV money is a plain decimal number (the page's figure, rounded the
// same way: rows add up as they do on the page) with the currency in its
// own column, so a spreadsheet sums it.
const csvCurrency = "USD"

// csvNumber is a shown amount ("-$1,234.56", "$19.97/h") as a number.
func csvNumber(shown string) string {
	return csvNumberForm.Replace(shown)
}

var csvNumberForm = strings.NewReplacer("$", "", ",", "", "/h", "", "−", "-")

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
