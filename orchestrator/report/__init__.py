"""What people read: a verdict's marker and note, the text and HTML reports, the webhook."""
