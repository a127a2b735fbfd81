"""The scheduled verification job fails visibly, naming the incomplete documents, and passes once repaired."""

from tests import docgen
from tests.defs.test_subsets import materialize
from ud_assets.defs.resources import LibrarianResource
from ud_assets.defs.verification import verify_library_job

ALL = {"document", "elements", "sections", "images", "chunks", "provenance_triples"}


def test_the_verification_job_names_incomplete_documents_until_they_are_repaired(tmp_path, instance):
    resource = LibrarianResource(backend="embedded", home=str(tmp_path / "ud"))
    lib = resource.get()
    for name in ("a.md", "b.md"):
        lib.add_document(name, "text/markdown", docgen.markdown() + name.encode(), title=name)
        assert materialize(resource, instance, [name], ALL).success
    job = verify_library_job

    assert job.execute_in_process(instance=instance, resources={"librarian": resource}).success

    lib.objects.delete(lib.list_children("b.md")[0].object_id)
    failed = job.execute_in_process(instance=instance, resources={"librarian": resource}, raise_on_error=False)
    assert not failed.success
    [failure] = failed.get_step_failure_events()
    data = failure.step_failure_data.user_failure_data
    assert data.description.startswith("1 of 2 documents are incomplete") and "b.md" in data.description
    rows = data.metadata["incomplete_documents"].records
    assert [(r.data["document_id"], "objects missing" in r.data["detail"]) for r in rows] == [("b.md", True)]

    assert materialize(resource, instance, ["b.md"], ALL, force=True).success
    assert job.execute_in_process(instance=instance, resources={"librarian": resource}).success
