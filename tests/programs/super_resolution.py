"""PyTorch's examples/super_resolution (the sub-pixel CNN of Shi et al. 2016 with PixelShuffle),
as its users write it, on generated smooth 24x24 images (sums of sinusoids) down-sampled by 3
instead of BSDS300. The only change to run it on jitorch is the import line."""
import argparse
from math import log10

import jitorch as torch
import jitorch.nn as nn
import jitorch.nn.init as init
import jitorch.nn.functional as F
import jitorch.optim as optim
from jitorch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self, upscale_factor):
        super(Net, self).__init__()

        self.relu = nn.ReLU()
        self.conv1 = nn.Conv2d(1, 16, (5, 5), (1, 1), (2, 2))
        self.conv2 = nn.Conv2d(16, 16, (3, 3), (1, 1), (1, 1))
        self.conv3 = nn.Conv2d(16, 8, (3, 3), (1, 1), (1, 1))
        self.conv4 = nn.Conv2d(8, upscale_factor ** 2, (3, 3), (1, 1), (1, 1))
        self.pixel_shuffle = nn.PixelShuffle(upscale_factor)

        self._initialize_weights()

    def forward(self, x):
        x = self.relu(self.conv1(x))
        x = self.relu(self.conv2(x))
        x = self.relu(self.conv3(x))
        x = self.pixel_shuffle(self.conv4(x))
        return x

    def _initialize_weights(self):
        init.orthogonal_(self.conv1.weight, init.calculate_gain('relu'))
        init.orthogonal_(self.conv2.weight, init.calculate_gain('relu'))
        init.orthogonal_(self.conv3.weight, init.calculate_gain('relu'))
        init.orthogonal_(self.conv4.weight)


def make_pairs(n, upscale_factor, generator, size=24):
    """(low-res input, high-res target): smooth random images and their area down-samples."""
    yy, xx = torch.meshgrid(torch.linspace(0, 1, size), torch.linspace(0, 1, size),
                            indexing="ij")
    freq = 1 + 3 * torch.rand(n, 2, 2, generator=generator)
    phase = 6.28 * torch.rand(n, 2, generator=generator)
    img = 0.5 + 0.25 * (torch.sin(freq[:, 0, 0, None, None] * 6.28 * yy +
                                  freq[:, 0, 1, None, None] * 6.28 * xx + phase[:, 0, None, None]) +
                        torch.cos(freq[:, 1, 0, None, None] * 6.28 * yy -
                                  freq[:, 1, 1, None, None] * 6.28 * xx + phase[:, 1, None, None]))
    target = img.unsqueeze(1)
    low = F.interpolate(target, scale_factor=1 / upscale_factor, mode="bilinear",
                        align_corners=False)
    return low, target


def main(argv=None):
    parser = argparse.ArgumentParser(description='PyTorch Super Res Example')
    parser.add_argument('--upscale_factor', type=int, default=3)
    parser.add_argument('--batchSize', type=int, default=16)
    parser.add_argument('--testBatchSize', type=int, default=32)
    parser.add_argument('--nEpochs', type=int, default=6)
    parser.add_argument('--lr', type=float, default=0.01)
    parser.add_argument('--cuda', action='store_true')
    parser.add_argument('--seed', type=int, default=123)
    opt = parser.parse_args(argv)

    if opt.cuda and not torch.cuda.is_available():
        raise Exception("No GPU found, please run without --cuda")

    torch.manual_seed(opt.seed)
    device = torch.device("cuda" if opt.cuda else "cpu")

    g = torch.Generator().manual_seed(0)
    training_data_loader = DataLoader(dataset=TensorDataset(*make_pairs(128, opt.upscale_factor, g)),
                                      batch_size=opt.batchSize, shuffle=True)
    testing_data_loader = DataLoader(dataset=TensorDataset(*make_pairs(32, opt.upscale_factor, g)),
                                     batch_size=opt.testBatchSize, shuffle=False)

    model = Net(upscale_factor=opt.upscale_factor).to(device)
    criterion = nn.MSELoss()
    optimizer = optim.Adam(model.parameters(), lr=opt.lr)

    def train(epoch):
        epoch_loss = 0
        for iteration, batch in enumerate(training_data_loader, 1):
            input, target = batch[0].to(device), batch[1].to(device)

            optimizer.zero_grad()
            loss = criterion(model(input), target)
            epoch_loss += loss.item()
            loss.backward()
            optimizer.step()

        print("===> Epoch {} Complete: Avg. Loss: {:.4f}".format(
            epoch, epoch_loss / len(training_data_loader)))

    def test():
        avg_psnr = 0
        with torch.no_grad():
            for batch in testing_data_loader:
                input, target = batch[0].to(device), batch[1].to(device)

                prediction = model(input)
                mse = criterion(prediction, target)
                psnr = 10 * log10(1 / mse.item())
                avg_psnr += psnr
        print("===> Avg. PSNR: {:.4f} dB".format(avg_psnr / len(testing_data_loader)))
        return avg_psnr / len(testing_data_loader)

    psnrs = [test()]
    for epoch in range(1, opt.nEpochs + 1):
        train(epoch)
        psnrs.append(test())
    return psnrs


if __name__ == "__main__":
    main()
