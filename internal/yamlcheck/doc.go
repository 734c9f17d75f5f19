// Package yamlcheck checks a decoded YAML document against the Go type it
// will be decoded into, and gives every config problem one format:
// `field (line N): message`, with the dotted field path and the line of its
// value in the file.
//
// Check finds every key given twice in one mapping (yaml.v3 alone refuses
// it in words that name no field, and stops decoding there), every unknown
// key and every value that does not fit its field's Go type (yaml.v3 alone
// truncates 2.9 into an int field without a word, and stops at the first
// unknown key inside a custom unmarshaller);
// Result.Locate rewrites the range checks a config's Validate made (plain
// "field: message" errors, possibly joined and wrapped) into the same
// format, finding each field's line in the document.
//
// It is the one config validator: the run config's blocks (cost,
// amdahl.profile, server.sim, ...) have no key checks of their own, only
// range checks in Validate that name their dotted field. Parse reads a
// document and names the line of a YAML syntax mistake.
//
// It knows Go's reflect kinds and yaml.v3's node tree. It does not know any
// config's meaning, defaults or ranges: those stay with the config's own
// Validate (experiment.Config, sim.Config).
package yamlcheck
