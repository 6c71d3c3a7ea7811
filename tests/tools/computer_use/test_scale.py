"""The coordinate mapping between the model's scaled screenshot and the real screen (requirement T-CU):
every model pixel maps to a real pixel that maps back to it, real pixels land inside the screenshot,
and a model pixel maps to the real pixel under its centre."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hermes.errors import ToolArgumentError
from hermes.tools.computer_use.screen import Scale

sizes = st.tuples(st.integers(64, 4000), st.integers(64, 3000))


@given(real=sizes, limit=sizes)
def test_model_pixels_map_to_real_pixels_and_back(real: tuple[int, int], limit: tuple[int, int]) -> None:
    scale = Scale.fit(real, limit)
    assert scale.model[0] <= min(real[0], limit[0]) and scale.model[1] <= min(real[1], limit[1])
    width, height = scale.model
    for x in {0, 1, width // 3, width // 2, width - 2, width - 1}:
        for y in {0, height // 2, height - 1}:
            if 0 <= x < width and 0 <= y < height:
                rx, ry = scale.to_real(x, y)
                assert 0 <= rx < real[0] and 0 <= ry < real[1]
                assert scale.to_model(rx, ry) == (x, y)
                # the model pixel's centre lies inside the real pixel it is mapped to
                assert rx <= (x + 0.5) * real[0] / width < rx + 1


def test_one_and_a_half_times_smaller() -> None:
    scale = Scale.fit((1920, 1200), (1280, 800))
    assert scale.model == (1280, 800)
    assert [scale.to_real(x, 0)[0] for x in range(4)] == [0, 2, 3, 5]  # model centres 0.5, 1.5, ... times 3/2
    assert [scale.to_model(x, 0)[0] for x in range(6)] == [0, 1, 1, 2, 3, 3]  # real centres 0.5, 1.5, ... times 2/3
    assert scale.box_to_model(111, 104, 9, 9) == [74, 69, 6, 7]
    assert scale.region_to_real(74, 69, 79, 74) == (111, 103, 9, 9)


def test_a_screen_smaller_than_the_limit_is_not_scaled() -> None:
    scale = Scale.fit((800, 600), (1280, 800))
    assert scale.model == (800, 600) and scale.to_real(799, 599) == (799, 599)


@pytest.mark.parametrize("point", [(1280, 0), (0, 800), (-1, 3), (5, -2)])
def test_points_off_the_screenshot_are_refused(point: tuple[int, int]) -> None:
    with pytest.raises(ToolArgumentError, match=r"off the screen: the screenshot is 1280x800"):
        Scale.fit((2560, 1600), (1280, 800)).to_real(*point)
