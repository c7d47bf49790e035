package hold

// OSErrorText renders an I/O error as the upstream CLI's messages embed it
// ("No such file or directory (os error 2)"); see osErrorText. It is exported
// for the host-local authority (package hold/local), whose state-directory
// refusals quote I/O errors in the same words.
func OSErrorText(err error) string { return osErrorText(err) }
