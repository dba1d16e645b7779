package domain

import (
	"fmt"
	"strconv"
	"strings"
)

// Money is an amount in integer micro-dollars (1 USD = 1,000,000), so
// per-minute proration of prices like $2.49/h stays exact (Q6).
type Money int64

// Micro is one dollar in micro-dollars.
const Micro Money = 1_000_000

// USD formats an amount as dollars with cents for people: "$1,234.56".
// Sub-cent remainders are rounded half away from zero.
func USD(m Money) string {
	neg := m < 0
	if neg {
		m = -m
	}
	cents := (m + 5_000) / 10_000
	whole := strconv.FormatInt(int64(cents/100), 10)
	for i := len(whole) - 3; i > 0; i -= 3 {
		whole = whole[:i] + "," + whole[i:]
	}
	s := fmt.Sprintf("$%s.%02d", whole, cents%100)
	if neg {
		s = "-" + s
	}
	return s
}

// DecimalUSD is the API's money form: a decimal string of dollars exact to the
// micro-dollar, with at least two decimals ("39.84", "2.4905", "0.000139").
func DecimalUSD(m Money) string {
	neg := m < 0
	if neg {
		m = -m
	}
	frac := strings.TrimRight(fmt.Sprintf("%06d", m%Micro), "0")
	for len(frac) < 2 {
		frac += "0"
	}
	s := strconv.FormatInt(int64(m/Micro), 10) + "." + frac
	if neg {
		s = "-" + s
	}
	return s
}

// ParseUSD reads a decimal dollar string ("40", "39.84", "2.4905") exactly.
// More than six decimals, signs, exponents and empty strings are refused.
func ParseUSD(s string) (Money, error) {
	s = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(s), "$"))
	whole, frac, _ := strings.Cut(s, ".")
	if whole == "" && frac == "" {
		return 0, fmt.Errorf("not a dollar amount")
	}
	if whole == "" {
		whole = "0"
	}
	if !allDigits(whole) || !allDigits(frac) || len(frac) > 6 || len(whole) > 12 {
		return 0, fmt.Errorf("%q is not a dollar amount like 12.50", s)
	}
	w, err := strconv.ParseInt(whole, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a dollar amount like 12.50", s)
	}
	f := int64(0)
	if frac != "" {
		f, _ = strconv.ParseInt(frac+strings.Repeat("0", 6-len(frac)), 10, 64)
	}
	return Money(w)*Micro + Money(f), nil
}

func allDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// Typed-amount refusals (B3): what ParseTypedUSD says, word for word the
// messages static/js/app.js's parseAmount gives, so a page never asks
// "Add $5,000.00?" about an amount the server then refuses.
const (
	AmountProblemEmpty    = "Give an amount in dollars, like 25.00."
	AmountProblemNegative = "Give a positive amount, like 25.00."
	AmountProblemCents    = "Give at most two decimals (cents), like 12.50."
	AmountProblemCommas   = "Commas separate thousands, like 5,000; cents follow a point, like 5.00."
	AmountProblemTooLarge = "That amount is too large."
)

// AmountError is a typed amount refused by ParseTypedUSD: its message is
// meant for the person who typed it.
type AmountError struct{ Problem string }

func (e *AmountError) Error() string { return e.Problem }

// ParseTypedUSD reads an amount a person typed in dollars (B3): spaces
// around it, an optional leading "$", the whole dollars plain or grouped by
// commas in threes ("5000", "5,000", "1,234,567"), and at most two
// decimals ("12.50", "12.5", ".50", "12."). A sign, "5,00", "1.234,56",
// three decimals and anything else are refused with a message saying
// which. The browser's mirror is parseAmount in static/js/app.js: change
// both together (web's TestTypedAmounts* run one table through each).
func ParseTypedUSD(s string) (Money, error) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "$") {
		s = strings.TrimSpace(s[1:])
	}
	if strings.HasPrefix(s, "-") || strings.HasPrefix(s, "\u2212") {
		return 0, &AmountError{AmountProblemNegative}
	}
	whole, frac, _ := strings.Cut(s, ".")
	if whole == "" && frac == "" {
		return 0, &AmountError{AmountProblemEmpty}
	}
	if strings.Contains(frac, ",") {
		return 0, &AmountError{AmountProblemCommas}
	}
	if !allDigits(frac) {
		return 0, &AmountError{AmountProblemEmpty}
	}
	if len(frac) > 2 {
		return 0, &AmountError{AmountProblemCents}
	}
	if strings.Contains(whole, ",") {
		groups := strings.Split(whole, ",")
		for i, g := range groups {
			if !allDigits(g) || g == "" || len(g) > 3 || (i > 0 && len(g) != 3) {
				return 0, &AmountError{AmountProblemCommas}
			}
		}
		whole = strings.Join(groups, "")
	}
	if !allDigits(whole) {
		return 0, &AmountError{AmountProblemEmpty}
	}
	if len(strings.TrimLeft(whole, "0")) > 12 {
		return 0, &AmountError{AmountProblemTooLarge}
	}
	cents := int64(0)
	for _, r := range strings.TrimLeft(whole, "0") + (frac + "00")[:2] {
		cents = cents*10 + int64(r-'0')
	}
	return Money(cents) * 10_000, nil
}
