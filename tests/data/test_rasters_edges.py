"""The reader rule for a VRT at its edges (spmlkit.data.rasters.check_raster_file): a
warped VRT's ``<SourceDataset>`` and an ``<OverviewDataset>`` name files too, and are held
to the same rule as ``<SourceFilename>`` — beside the VRT (or below it), never elsewhere
— checked on the XML before GDAL opens anything."""
from __future__ import annotations

import pytest

from spmlkit.data import rasters as R
from spmlkit.errors import DataFormatError

WARPED = """<VRTDataset rasterXSize="4" rasterYSize="4" subClass="VRTWarpedDataset">
  <VRTRasterBand dataType="Float32" band="1" subClass="VRTWarpedRasterBand"/>
  <GDALWarpOptions><SourceDataset relativeToVRT="1">{src}</SourceDataset></GDALWarpOptions>
</VRTDataset>"""
OVERVIEW = """<VRTDataset rasterXSize="4" rasterYSize="4">
  <VRTRasterBand dataType="Float32" band="1">
    <SimpleSource><SourceFilename relativeToVRT="1">temp.tif</SourceFilename></SimpleSource>
    <Overview><SourceFilename relativeToVRT="1">temp.tif</SourceFilename><SourceBand>1</SourceBand></Overview>
  </VRTRasterBand>
  <OverviewList>2</OverviewList><OverviewDataset>{src}</OverviewDataset>
</VRTDataset>"""


@pytest.mark.parametrize("template", [WARPED, OVERVIEW], ids=["SourceDataset", "OverviewDataset"])
@pytest.mark.parametrize("src", ["../elsewhere/temp.tif", "/tmp/elsewhere/temp.tif", "/vsicurl/http://x/a.tif"])
def test_every_tag_naming_a_file_is_held_to_the_folder(tmp_path, template, src):
    (tmp_path / "env").mkdir()
    vrt = tmp_path / "env" / "t.vrt"
    vrt.write_text(template.format(src=src))
    with pytest.raises(DataFormatError) as e:
        R.check_raster_file(vrt)
    assert f"references {src!r}, outside its folder" in str(e.value)
    vrt.write_text(template.format(src="temp.tif"))  # beside it: fine
    R.check_raster_file(vrt)
