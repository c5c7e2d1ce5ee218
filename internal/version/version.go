package version

// Version is the vertebrae release, written into every report.
const Version = "0.1.0"
