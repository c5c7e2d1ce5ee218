// Package htmlcheck is a test helper of package report and of the CLI's
// tests: it lays an HTML report out in headless Chromium at a given viewport
// width and checks that it is readable there (SPEC §5.8): the page does not
// scroll sideways (wide tables and figures scroll in their own boxes), name
// columns keep a usable width and figure text stays legible.
package htmlcheck
