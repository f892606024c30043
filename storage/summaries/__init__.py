"""What is kept about summaries: posted digests and their pages, window records, the
`memory` of validated items, and the log of summary runs."""
