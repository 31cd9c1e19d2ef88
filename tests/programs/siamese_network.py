"""PyTorch's examples/siamese_network, as its users write it, with a small CNN in place of the
torchvision ResNet-18 backbone and generated 12x12 "digits" (a class is a bar at one of 6
places) instead of MNIST pairs. Pairs of the same class are labelled 1, different classes 0.
The only change to run it on jitorch is the import line."""
import argparse
import random

import jitorch as torch
import jitorch.nn as nn
import jitorch.nn.functional as F
import jitorch.optim as optim
from jitorch.optim.lr_scheduler import StepLR
from jitorch.utils.data import DataLoader, Dataset


class SiameseNetwork(nn.Module):
    """
        Siamese network for image similarity estimation.
        The network is composed of two identical networks, one for each input.
        The output of each network is concatenated and passed to a linear layer.
        The output of the linear layer passed through a sigmoid function.
    """
    def __init__(self):
        super(SiameseNetwork, self).__init__()
        # a small CNN instead of torchvision.models.resnet18
        self.backbone = nn.Sequential(
            nn.Conv2d(1, 8, kernel_size=3, padding=1), nn.BatchNorm2d(8), nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
            nn.Conv2d(8, 16, kernel_size=3, padding=1), nn.BatchNorm2d(16), nn.ReLU(inplace=True),
            nn.AdaptiveAvgPool2d((3, 3)),
            nn.Flatten(),
        )
        self.fc_in_features = 16 * 3 * 3

        # add linear layers to compare between the features of the two images
        self.fc = nn.Sequential(
            nn.Linear(self.fc_in_features * 2, 64),
            nn.ReLU(inplace=True),
            nn.Linear(64, 1),
        )

        self.sigmoid = nn.Sigmoid()

        # initialize the weights
        self.backbone.apply(self.init_weights)
        self.fc.apply(self.init_weights)

    def init_weights(self, m):
        if isinstance(m, nn.Linear):
            torch.nn.init.xavier_uniform_(m.weight)
            m.bias.data.fill_(0.01)

    def forward_once(self, x):
        output = self.backbone(x)
        output = output.view(output.size()[0], -1)
        return output

    def forward(self, input1, input2):
        # get two images' features
        output1 = self.forward_once(input1)
        output2 = self.forward_once(input2)

        # concatenate both images' features
        output = torch.cat((output1, output2), 1)

        # pass the concatenation to the linear layers
        output = self.fc(output)

        # pass the out of the linear layers to sigmoid layer
        output = self.sigmoid(output)

        return output


class APP_MATCHER(Dataset):
    """Pairs of generated digits: (image_1, image_2, 1 if same class else 0)."""

    def __init__(self, n, seed):
        super(APP_MATCHER, self).__init__()
        g = torch.Generator().manual_seed(seed)
        self.targets = torch.randint(0, 6, (n,), generator=g)
        self.data = 0.4 * torch.randn(n, 1, 12, 12, generator=g)
        for i in range(n):
            k = int(self.targets[i])
            self.data[i, 0, 2 * k:2 * k + 2, 2:10] += 1.5
        self.group_examples()
        self.rng = random.Random(seed)

    def group_examples(self):
        self.grouped_examples = {}
        for i in range(6):
            self.grouped_examples[i] = torch.nonzero(self.targets == i).flatten().tolist()

    def __len__(self):
        return self.data.shape[0]

    def __getitem__(self, index):
        # pick some random class for the first image
        selected_class = self.rng.randint(0, 5)
        index_1 = self.rng.choice(self.grouped_examples[selected_class])
        image_1 = self.data[index_1].clone().float()

        # same class
        if index % 2 == 0:
            index_2 = self.rng.choice(self.grouped_examples[selected_class])
            image_2 = self.data[index_2].clone().float()
            target = torch.tensor(1, dtype=torch.float)
        # different class
        else:
            other_selected_class = self.rng.randint(0, 5)
            while other_selected_class == selected_class:
                other_selected_class = self.rng.randint(0, 5)
            index_2 = self.rng.choice(self.grouped_examples[other_selected_class])
            image_2 = self.data[index_2].clone().float()
            target = torch.tensor(0, dtype=torch.float)

        return image_1, image_2, target


def train(args, model, device, train_loader, optimizer, epoch):
    model.train()

    # we aren't using `TripletLoss` as the MNIST dataset is simple, so `BCELoss` can do the trick.
    criterion = nn.BCELoss()

    for batch_idx, (images_1, images_2, targets) in enumerate(train_loader):
        images_1, images_2, targets = images_1.to(device), images_2.to(device), targets.to(device)
        optimizer.zero_grad()
        outputs = model(images_1, images_2).squeeze()
        loss = criterion(outputs, targets)
        loss.backward()
        optimizer.step()
        if batch_idx % args.log_interval == 0:
            print('Train Epoch: {} [{}/{} ({:.0f}%)]\tLoss: {:.6f}'.format(
                epoch, batch_idx * len(images_1), len(train_loader.dataset),
                100. * batch_idx / len(train_loader), loss.item()))


def test(model, device, test_loader):
    model.eval()
    test_loss = 0
    correct = 0

    # we aren't using `TripletLoss` as the MNIST dataset is simple, so `BCELoss` can do the trick.
    criterion = nn.BCELoss()

    with torch.no_grad():
        for (images_1, images_2, targets) in test_loader:
            images_1, images_2, targets = images_1.to(device), images_2.to(device), targets.to(device)
            outputs = model(images_1, images_2).squeeze()
            test_loss += criterion(outputs, targets).sum().item()  # sum up batch loss
            pred = torch.where(outputs > 0.5, 1, 0)  # get the index of the max log-probability
            correct += pred.eq(targets.view_as(pred)).sum().item()

    test_loss /= len(test_loader.dataset)

    print('\nTest set: Average loss: {:.4f}, Accuracy: {}/{} ({:.0f}%)\n'.format(
        test_loss, correct, len(test_loader.dataset),
        100. * correct / len(test_loader.dataset)))
    return correct / len(test_loader.dataset)


def main(argv=None):
    parser = argparse.ArgumentParser(description='PyTorch Siamese network Example')
    parser.add_argument('--batch-size', type=int, default=32)
    parser.add_argument('--test-batch-size', type=int, default=100)
    parser.add_argument('--epochs', type=int, default=4)
    parser.add_argument('--lr', type=float, default=1.0)
    parser.add_argument('--gamma', type=float, default=0.7)
    parser.add_argument('--no-accel', action='store_true')
    parser.add_argument('--seed', type=int, default=1)
    parser.add_argument('--log-interval', type=int, default=10)
    parser.add_argument('--save-model', default=None)
    args = parser.parse_args(argv)

    use_accel = not args.no_accel and torch.accelerator.is_available()

    torch.manual_seed(args.seed)

    if use_accel:
        device = torch.accelerator.current_accelerator()
    else:
        device = torch.device("cpu")

    train_kwargs = {'batch_size': args.batch_size}
    test_kwargs = {'batch_size': args.test_batch_size}

    train_dataset = APP_MATCHER(320, seed=0)
    test_dataset = APP_MATCHER(200, seed=1)
    train_loader = DataLoader(train_dataset, **train_kwargs)
    test_loader = DataLoader(test_dataset, **test_kwargs)

    model = SiameseNetwork().to(device)
    optimizer = optim.Adadelta(model.parameters(), lr=args.lr)

    scheduler = StepLR(optimizer, step_size=1, gamma=args.gamma)
    accuracies = [test(model, device, test_loader)]
    for epoch in range(1, args.epochs + 1):
        train(args, model, device, train_loader, optimizer, epoch)
        accuracies.append(test(model, device, test_loader))
        scheduler.step()

    if args.save_model:
        torch.save(model.state_dict(), args.save_model)
    return accuracies


if __name__ == '__main__':
    main()
