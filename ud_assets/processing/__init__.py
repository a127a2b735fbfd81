"""The stages of decoding one librarian document, as plain functions over a Librarian (no Dagster).

model        what stages pass each other: Attempt, each stage's typed result, Outcome
document     the attempt (metadata, detection, fingerprint) and the `document` stage
elements     partition and store elements, or load the stored ones; build sections/images
sections     store sections; images: store images; provenance: triples + commit; chunks
generations  the up-to-date rule, commit, the generation diff, the failure ledger
parse_ahead  a batch's parses in background children while finished documents are stored
runner       process_document: which stage's input comes from this run, which from storage
lineage      from any entity back to its document and position, through the triples
"""
