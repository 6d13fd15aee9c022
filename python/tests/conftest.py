"""Every test must leave the Vulkan validation layers silent (OA_VALIDATION=1)."""
import pytest

import oa


@pytest.fixture(autouse=True)
def no_validation_messages():
    before = oa.validation_message_count()
    yield
    oa.synchronize()
    assert oa.validation_message_count() == before, "the Vulkan validation layers reported a message"
